import java.io.File;
import java.nio.charset.StandardCharsets;
import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

/**
 * What a user of ARX 3.9 does for anonlab's "generalize" benchmark, start to written release:
 * read the CSV, set one hierarchy per quasi-identifier, k-anonymity with a suppression limit,
 * precision with suppression (ARX's Metric.createPrecisionMetric(false, 0.5): anonlab's default
 * metric with suppression above 0), anonymize and save the output table as CSV.
 *
 * args: data.csv  delimiter  hierarchyFolder  k  suppression  output.csv  qi1,qi2,...
 * Every other column is insensitive (released as it is): ARX refuses a sensitive attribute
 * without a privacy model on it, and anonlab's --sensitive is only a role for its risk section.
 * Prints one JSON line: the transformation's levels and the milliseconds of each step.
 */
public class ArxWhole {
    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        char delimiter = args[1].charAt(0);
        Data data = Data.create(new File(args[0]), StandardCharsets.UTF_8, delimiter);
        String[] qis = args[6].split(",");
        for (int i = 0; i < data.getHandle().getNumColumns(); i++) {
            data.getDefinition().setAttributeType(data.getHandle().getAttributeName(i),
                                                  AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        for (String qi : qis) {
            File h = new File(args[2], "hierarchy_" + qi + ".csv");
            data.getDefinition().setAttributeType(qi,
                    Hierarchy.create(h, StandardCharsets.UTF_8, ';'));
        }
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(Integer.parseInt(args[3])));
        config.setSuppressionLimit(Double.parseDouble(args[4]));
        config.setQualityModel(Metric.createPrecisionMetric(false, 0.5d));
        long t1 = System.nanoTime();
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        long t2 = System.nanoTime();
        result.getOutput().save(new File(args[5]), delimiter);
        long t3 = System.nanoTime();
        StringBuilder levels = new StringBuilder();
        for (int level : result.getGlobalOptimum().getTransformation()) {
            levels.append(levels.length() == 0 ? "" : ", ").append(level);
        }
        System.out.printf("{\"levels\": [%s], \"read_ms\": %.1f, \"anonymize_ms\": %.1f, "
                + "\"save_ms\": %.1f, \"search_ms\": %d}%n", levels, (t1 - t0) / 1e6,
                (t2 - t1) / 1e6, (t3 - t2) / 1e6, result.getTime());
    }
}
