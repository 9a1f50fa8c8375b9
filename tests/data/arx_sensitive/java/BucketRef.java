import java.io.*;
import java.util.*;
import org.deidentifier.arx.framework.check.distribution.Distribution;

/**
 * Prints the bucket array of ARX 3.9's Distribution(int[] elements, int[] frequencies) (helper H1).
 * Input (stdin): one case per line, "code,code,...;freq,freq,...". Output: one line per case,
 * the buckets as "element:frequency" pairs separated by spaces (-1 = empty bucket).
 */
public class BucketRef {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            String[] parts = line.split(";");
            int[] codes = Arrays.stream(parts[0].split(",")).mapToInt(Integer::parseInt).toArray();
            int[] freqs = Arrays.stream(parts[1].split(",")).mapToInt(Integer::parseInt).toArray();
            int[] b = new Distribution(codes, freqs).getBuckets();
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < b.length; i += 2) sb.append(i == 0 ? "" : " ").append(b[i]).append(':').append(b[i + 1]);
            System.out.println(sb);
        }
    }
}
