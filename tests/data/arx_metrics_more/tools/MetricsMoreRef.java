import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.metric.InformationLoss;
import org.deidentifier.arx.metric.Metric;
import org.deidentifier.arx.metric.Metric.AggregateFunction;

/**
 * Prints ARX 3.9's entropy-based information loss, classification metric and static metric
 * (ARXNode.getHighestScore() after ARXResult.getOutput(node)) on chosen transformations, one
 * JSON object per line; the first line names the quasi-identifiers and ARX's global optimum.
 *
 * args: data.csv  hierarchies(name=path,...)  k  suppression  metric  gsFactor  aggregate|-
 *       weights(name:w,...|-)  nodes("all" | "l,l,l;l,l,l")  targets(name,...|-)
 *       static(name:v/v/v;name:v/v|-)  subset.csv|-  (subset: delta-presence [0, 1])
 */
public class MetricsMoreRef {

    static AggregateFunction agg(String s) {
        switch (s) {
        case "arithmetic_mean": return AggregateFunction.ARITHMETIC_MEAN;
        case "geometric_mean": return AggregateFunction.GEOMETRIC_MEAN;
        case "sum": return AggregateFunction.SUM;
        case "max": return AggregateFunction.MAXIMUM;
        case "rank": return AggregateFunction.RANK;
        default: throw new IllegalArgumentException(s);
        }
    }

    static Map<String, List<Double>> table(String spec) {
        Map<String, List<Double>> out = new HashMap<>();
        for (String part : spec.split(";")) {
            String[] kv = part.split(":", 2);
            List<Double> values = new ArrayList<>();
            for (String v : kv[1].split("/")) values.add(Double.parseDouble(v));
            out.put(kv[0], values);
        }
        return out;
    }

    static Metric<?> metric(String name, double gs, String a, String staticSpec) {
        boolean hasAgg = !a.equals("-");
        switch (name) {
        case "entropy_information_loss": return Metric.createEntropyBasedInformationLossMetric(gs);
        case "classification": return Metric.createClassificationMetric(gs);
        case "static": return hasAgg ? Metric.createStaticMetric(table(staticSpec), agg(a))
                                     : Metric.createStaticMetric(table(staticSpec));
        default: throw new IllegalArgumentException(name);
        }
    }

    static String str(InformationLoss<?> loss) {
        return loss == null ? "null" : "\"" + loss.toString() + "\"";
    }

    static String vec(InformationLoss<?> loss) {
        if (loss == null || !(loss.getValue() instanceof double[])) return "null";
        double[] v = (double[]) loss.getValue();
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < v.length; i++) {
            if (i > 0) b.append(", ");
            b.append('"').append(Double.toString(v[i])).append('"');
        }
        return b.append("]").toString();
    }

    /** Materializes the path from the bottom to the node with levels lv (ARXNode.expand). */
    static ARXNode find(ARXLattice lattice, int[] lv) {
        ARXNode cur = lattice.getBottom();
        while (!Arrays.equals(cur.getTransformation(), lv)) {
            cur.expand();
            ARXNode next = null;
            for (ARXNode s : cur.getSuccessors()) {
                int[] t = s.getTransformation();
                boolean below = true;
                for (int i = 0; i < t.length; i++) below &= t[i] <= lv[i];
                if (below) { next = s; break; }
            }
            if (next == null) throw new IllegalArgumentException("no node " + Arrays.toString(lv));
            cur = next;
        }
        return cur;
    }

    public static void main(String[] args) throws Exception {
        Data data = Data.create(new File(args[0]), StandardCharsets.UTF_8, ';');
        DataHandle handle = data.getHandle();
        Set<String> qis = new HashSet<>();
        for (String part : args[1].split(",")) {
            String[] kv = part.split("=", 2);
            qis.add(kv[0]);
            data.getDefinition().setAttributeType(kv[0], Hierarchy.create(new File(kv[1]), StandardCharsets.UTF_8, ';'));
        }
        for (int c = 0; c < handle.getNumColumns(); c++) {
            String name = handle.getAttributeName(c);
            if (!qis.contains(name)) data.getDefinition().setAttributeType(name, AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        if (!args[9].equals("-")) {
            for (String t : args[9].split(",")) data.getDefinition().setResponseVariable(t, true);
        }
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(Integer.parseInt(args[2])));
        if (!args[11].equals("-")) {
            DataSubset subset = DataSubset.create(data, Data.create(new File(args[11]), StandardCharsets.UTF_8, ';'));
            config.addPrivacyModel(new DPresence(0d, 1d, subset));
        }
        config.setSuppressionLimit(Double.parseDouble(args[3]));
        config.setQualityModel(metric(args[4], Double.parseDouble(args[5]), args[6], args[10]));
        if (!args[7].equals("-")) {
            for (String part : args[7].split(",")) {
                String[] kv = part.split(":");
                config.setAttributeWeight(kv[0], Double.parseDouble(kv[1]));
            }
        }
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        ARXLattice lattice = result.getLattice();
        List<ARXNode> nodes = new ArrayList<>();
        if (args[8].equals("all")) {
            for (int level = 0; level < lattice.getLevels().length; level++) {
                for (ARXNode node : lattice.getLevels()[level]) node.expand();
            }
            for (ARXNode[] level : lattice.getLevels()) nodes.addAll(Arrays.asList(level));
        } else {
            for (String t : args[8].split(";")) {
                String[] p = t.split(",");
                int[] lv = new int[p.length];
                for (int i = 0; i < p.length; i++) lv[i] = Integer.parseInt(p[i].trim());
                nodes.add(find(lattice, lv));
            }
        }
        ARXNode bottom = lattice.getBottom();
        System.out.println("{\"qis\": \"" + String.join(",", bottom.getQuasiIdentifyingAttributes())
                           + "\", \"optimum\": \"" + (result.getGlobalOptimum() == null ? "null"
                           : Arrays.toString(result.getGlobalOptimum().getTransformation()))
                           + "\", \"optimum_loss\": " + (result.getGlobalOptimum() == null ? "null"
                           : str(result.getGlobalOptimum().getHighestScore())) + "}");
        for (ARXNode node : nodes) {
            // unchecked first, so that getOutput computes the loss instead of keeping an estimate
            node.access().setChecked(false);
            DataHandle out = result.getOutput(node, true);
            InformationLoss<?> loss = node.getHighestScore();
            System.out.println("{\"node\": \"" + Arrays.toString(node.getTransformation())
                               + "\", \"anonymous\": \"" + node.getAnonymity()
                               + "\", \"loss\": " + str(loss) + ", \"values\": " + vec(loss) + "}");
            out.release();
        }
    }
}
