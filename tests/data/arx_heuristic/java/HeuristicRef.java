import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.ARXConfiguration.AnonymizationAlgorithm;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.framework.lattice.SolutionSpaceLong;
import org.deidentifier.arx.framework.lattice.Transformation;
import org.deidentifier.arx.metric.Metric;

/**
 * Runs ARX 3.9's heuristic searches (Lightning bottom-up, top-down, genetic) and prints one JSON
 * object per run: transformation, score, checked nodes, wall and CPU milliseconds.
 *
 * args: run data.csv hierarchies(name=path,... in QI order) algorithm(lightning|top-down|genetic)
 *           k suppression metric(loss|entropy_with_suppression) gsFactor stepLimit timeLimitMs
 *           runs deterministic(true|false) [data delimiter, default ';'; hierarchies use ';']
 *       neighbours maxLevels(l,l,l) node(l,l,l): ARX's order of a node's successors and predecessors
 */
public class HeuristicRef {

    static Metric<?> metric(String name, double gs) {
        switch (name) {
        case "loss": return Metric.createLossMetric(gs);
        case "entropy_with_suppression": return Metric.createPrecomputedEntropyMetric(0.1d, false);
        case "entropy": return Metric.createPrecomputedEntropyMetric(0.1d, true);
        default: throw new IllegalArgumentException(name);
        }
    }

    static AnonymizationAlgorithm algorithm(String name) {
        switch (name) {
        case "lightning": return AnonymizationAlgorithm.BEST_EFFORT_BOTTOM_UP;
        case "top-down": return AnonymizationAlgorithm.BEST_EFFORT_TOP_DOWN;
        case "genetic": return AnonymizationAlgorithm.BEST_EFFORT_GENETIC;
        default: throw new IllegalArgumentException(name);
        }
    }

    static int[] ints(String s) {
        String[] p = s.split(",");
        int[] out = new int[p.length];
        for (int i = 0; i < p.length; i++) out[i] = Integer.parseInt(p[i].trim());
        return out;
    }

    static void neighbours(String[] args) {
        int[] max = ints(args[1]);
        SolutionSpaceLong space = new SolutionSpaceLong(new int[max.length], max);
        Transformation<?> t = space.getTransformation(ints(args[2]));
        StringBuilder b = new StringBuilder("{\"successors\": [");
        for (int i = 0; i < t.getSuccessors().size(); i++) {
            if (i > 0) b.append(", ");
            b.append(Arrays.toString(space.getTransformation(t.getSuccessors().getQuick(i)).getGeneralization()));
        }
        b.append("], \"predecessors\": [");
        for (int i = 0; i < t.getPredecessors().size(); i++) {
            if (i > 0) b.append(", ");
            b.append(Arrays.toString(space.getTransformation(t.getPredecessors().getQuick(i)).getGeneralization()));
        }
        System.out.println(b.append("]}"));
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("neighbours")) {
            neighbours(args);
            return;
        }
        char delimiter = args.length > 12 ? args[12].charAt(0) : ';';
        int runs = Integer.parseInt(args[10]);
        java.lang.management.ThreadMXBean bean = java.lang.management.ManagementFactory.getThreadMXBean();
        for (int r = 0; r < runs; r++) {
            Data data = Data.create(new File(args[1]), StandardCharsets.UTF_8, delimiter);
            DataHandle handle = data.getHandle();
            Set<String> qis = new LinkedHashSet<>();
            for (String part : args[2].split(",")) {
                String[] kv = part.split("=", 2);
                qis.add(kv[0]);
                data.getDefinition().setAttributeType(kv[0], Hierarchy.create(new File(kv[1]), StandardCharsets.UTF_8, ';'));
            }
            for (int c = 0; c < handle.getNumColumns(); c++) {
                String name = handle.getAttributeName(c);
                if (!qis.contains(name)) data.getDefinition().setAttributeType(name, AttributeType.INSENSITIVE_ATTRIBUTE);
            }
            ARXConfiguration config = ARXConfiguration.create(Double.parseDouble(args[5]),
                                                              metric(args[6], Double.parseDouble(args[7])));
            config.addPrivacyModel(new KAnonymity(Integer.parseInt(args[4])));
            config.setAlgorithm(algorithm(args[3]));
            config.setHeuristicSearchStepLimit(Integer.parseInt(args[8]));
            config.setHeuristicSearchTimeLimit(Integer.parseInt(args[9]));
            config.setGeneticAlgorithmDeterministic(Boolean.parseBoolean(args[11]));
            long cpu0 = bean.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            ARXResult result = new ARXAnonymizer().anonymize(data, config);
            long wall = System.nanoTime() - t0;
            long cpu = bean.getCurrentThreadCpuTime() - cpu0;
            ARXNode opt = result.getGlobalOptimum();
            int checked = 0;
            for (ARXNode[] level : result.getLattice().getLevels()) {
                for (ARXNode node : level) if (node.isChecked()) checked++;
            }
            System.out.println("{\"algorithm\": \"" + args[3] + "\", \"run\": " + r
                    + ", \"qis\": \"" + String.join(",", qis) + "\""
                    + ", \"transformation\": " + (opt == null ? "null" : Arrays.toString(opt.getTransformation()))
                    + ", \"score\": " + (opt == null ? "null" : "\"" + opt.getHighestScore() + "\"")
                    + ", \"checked\": " + checked
                    + ", \"wall_ms\": " + (wall / 1e6) + ", \"cpu_ms\": " + (cpu / 1e6) + "}");
        }
    }
}
