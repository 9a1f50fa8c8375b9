import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.*;

import org.deidentifier.arx.*;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.AttributeType.Hierarchy.DefaultHierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.criteria.EntropyLDiversity.EntropyEstimator;
import org.deidentifier.arx.metric.Metric;

/**
 * Per-class reference for anonlab's sensitive-attribute models (helper H1, issue 13).
 *
 * Reads a ';'-separated CSV with a header "cls;s" (one row per record), makes "cls" the only
 * quasi-identifier (hierarchy value -> "*") and "s" the sensitive attribute, runs ARX 3.9 with a
 * suppression limit of 100 % and one privacy model, and prints the classes ARX suppresses at the
 * bottom node (cls at level 0), i.e. the classes for which the model's isAnonymous() is false.
 *
 * Usage: java -cp "classes:$(cat cp.txt):ref/sensitive" SensitiveRef DATA.csv [--hierarchy H.csv]
 *        [--decimal] MODEL...
 * MODEL: distinct:L | entropy:L:shannon|grassberger | recursive:C:L | equal:T | ordered:T |
 *        hierarchical:T | basic:BETA | enhanced:BETA | delta:DELTA
 * Output: one line per model: MODEL<TAB>comma-separated suppressed class labels (sorted).
 */
public class SensitiveRef {

    static PrivacyCriterion model(String spec, Hierarchy sensitive) {
        String[] p = spec.split(":");
        switch (p[0]) {
        case "distinct": return new DistinctLDiversity("s", Integer.parseInt(p[1]));
        case "entropy": return new EntropyLDiversity("s", Double.parseDouble(p[1]),
                p[2].equals("grassberger") ? EntropyEstimator.GRASSBERGER : EntropyEstimator.SHANNON);
        case "recursive": return new RecursiveCLDiversity("s", Double.parseDouble(p[1]), Integer.parseInt(p[2]));
        case "equal": return new EqualDistanceTCloseness("s", Double.parseDouble(p[1]));
        case "ordered": return new OrderedDistanceTCloseness("s", Double.parseDouble(p[1]));
        case "hierarchical": return new HierarchicalDistanceTCloseness("s", Double.parseDouble(p[1]), sensitive);
        case "basic": return new BasicBLikeness("s", Double.parseDouble(p[1]));
        case "enhanced": return new EnhancedBLikeness("s", Double.parseDouble(p[1]));
        case "delta": return new DDisclosurePrivacy("s", Double.parseDouble(p[1]));
        default: throw new IllegalArgumentException(spec);
        }
    }

    public static void main(String[] args) throws Exception {
        String dataPath = args[0];
        String hierarchyPath = null;
        boolean decimal = false;
        List<String> models = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--hierarchy")) hierarchyPath = args[++i];
            else if (args[i].equals("--decimal")) decimal = true;
            else models.add(args[i]);
        }
        Hierarchy sensitive = hierarchyPath == null ? null
                : Hierarchy.create(hierarchyPath, StandardCharsets.UTF_8, ';');
        for (String spec : models) {
            Data data = Data.create(dataPath, StandardCharsets.UTF_8, ';');
            DataHandle input = data.getHandle();
            int cls = input.getColumnIndexOf("cls");
            DefaultHierarchy h = Hierarchy.create();
            Set<String> seen = new LinkedHashSet<>();
            for (int r = 0; r < input.getNumRows(); r++) seen.add(input.getValue(r, cls));
            for (String v : seen) h.add(v, "*");
            data.getDefinition().setAttributeType("cls", h);
            data.getDefinition().setAttributeType("s", AttributeType.SENSITIVE_ATTRIBUTE);
            if (decimal) data.getDefinition().setDataType("s", DataType.DECIMAL);
            ARXConfiguration config = ARXConfiguration.create();
            config.setSuppressionLimit(1.0d);
            config.setQualityModel(Metric.createLossMetric());
            config.addPrivacyModel(model(spec, sensitive));
            ARXResult result = new ARXAnonymizer().anonymize(data, config);
            DataHandle output = result.getOutput(result.getLattice().getBottom(), false);
            TreeSet<String> out = new TreeSet<>();
            for (int r = 0; r < output.getNumRows(); r++) {
                if (output.isOutlier(r)) out.add(input.getValue(r, cls));
            }
            System.out.println(spec + "\t" + String.join(",", out));
        }
    }
}
