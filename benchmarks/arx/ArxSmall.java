import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXLattice;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX 3.9's optimal FLASH search on a small table, for benchmarks/small_table.py (issue 23):
 * k-anonymity with a suppression limit and ARX's precision metric
 * (Metric.createPrecisionMetric(): non-monotonic, arithmetic mean, generalization/suppression
 * factor 0.5), practical monotonicity off (ARX's default).
 *
 * args: data.csv  delimiter  hierarchyFolder  qi1,qi2,...  warmups  repeats
 * Reads one configuration a line from standard input: "k suppression". For each, runs
 * ARXAnonymizer.anonymize warmups + repeats times in this JVM (the data read and its
 * hierarchies set before each run, outside the clock) and prints one JSON line: the thread CPU
 * seconds of each timed anonymize call, the nodes checked (ARXNode.isChecked over the lattice,
 * as ARX's tests count them), the lattice's size, the optimum and its score String.
 * Every column but the quasi-identifiers is insensitive.
 */
public class ArxSmall {

    static Data load(String[] args) throws Exception {
        Data data = Data.create(new File(args[0]), StandardCharsets.UTF_8, args[1].charAt(0));
        for (int i = 0; i < data.getHandle().getNumColumns(); i++) {
            data.getDefinition().setAttributeType(data.getHandle().getAttributeName(i),
                                                  AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        for (String qi : args[3].split(",")) {
            File h = new File(args[2], "hierarchy_" + qi + ".csv");
            data.getDefinition().setAttributeType(qi,
                    Hierarchy.create(h, StandardCharsets.UTF_8, ';'));
        }
        return data;
    }

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        int warmups = Integer.parseInt(args[4]);
        int repeats = Integer.parseInt(args[5]);
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                                                                     StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String[] kv = line.trim().split("\\s+");
            StringBuilder cpus = new StringBuilder();
            ARXResult result = null;
            for (int run = 0; run < warmups + repeats; run++) {
                Data data = load(args);
                ARXConfiguration config = ARXConfiguration.create();
                config.addPrivacyModel(new KAnonymity(Integer.parseInt(kv[0])));
                config.setSuppressionLimit(Double.parseDouble(kv[1]));
                config.setQualityModel(Metric.createPrecisionMetric());
                long cpu0 = bean.getCurrentThreadCpuTime();
                result = new ARXAnonymizer().anonymize(data, config);
                long cpu = bean.getCurrentThreadCpuTime() - cpu0;
                if (run >= warmups) {
                    cpus.append(cpus.length() == 0 ? "" : ", ").append(cpu / 1e9);
                }
            }
            ARXLattice lattice = result.getLattice();
            int checked = 0;
            int size = 0;
            for (ARXNode[] level : lattice.getLevels()) {
                for (ARXNode node : level) {
                    size++;
                    if (node.isChecked()) checked++;
                }
            }
            ARXNode opt = result.getGlobalOptimum();
            System.out.println("{\"k\": " + kv[0] + ", \"suppression\": " + kv[1]
                    + ", \"cpu_seconds\": [" + cpus + "], \"nodes_checked\": " + checked
                    + ", \"lattice_size\": " + size + ", \"transformation\": "
                    + (opt == null ? "null" : Arrays.toString(opt.getTransformation()))
                    + ", \"highest_score\": "
                    + (opt == null ? "null" : q(opt.getHighestScore().toString())) + "}");
        }
    }
}
