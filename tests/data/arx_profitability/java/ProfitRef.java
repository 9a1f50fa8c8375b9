import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.ARXLattice.ARXNode;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.metric.InformationLoss;
import org.deidentifier.arx.metric.Metric;

/**
 * Runs ARX 3.9.2 with one of its four profitability models and prints, as one JSON object,
 * the optimum, its score String, the search's statistics and (with nodes=all) every node's
 * score (ARXNode.getHighestScore() after ARXResult.getOutput(node)).
 *
 * Reads one case a line from standard input, its arguments separated by tabs (key=value): data=CSV qis=name:path|name:path sensitive=name|-
 *   model=prosecutor|prosecutor-no-attack|journalist|journalist-no-attack subset=CSV|-
 *   suppression=0.04 metric=NAME gs=0.5 cb=benefit,loss,gain,cost|- pm=true|false nodes=all|none
 * NAME: publisher-payout, publisher-payout-journalist, loss, entropy-based, entropy,
 *       entropy_with_suppression (precomputed, threshold 0.1, aggregate SUM), discernibility,
 *       precision
 */
public class ProfitRef {

    static Metric<?> metric(String name, double gs) {
        switch (name) {
        case "publisher-payout": return Metric.createPublisherPayoutMetric(false, gs);
        case "publisher-payout-journalist": return Metric.createPublisherPayoutMetric(true, gs);
        case "loss": return Metric.createLossMetric(gs);
        case "entropy-based": return Metric.createEntropyBasedInformationLossMetric(gs);
        case "entropy": return Metric.createPrecomputedEntropyMetric(0.1d, true, gs);
        case "entropy_with_suppression": return Metric.createPrecomputedEntropyMetric(0.1d, false, gs);
        case "discernibility": return Metric.createDiscernabilityMetric(true);
        case "precision": return Metric.createPrecisionMetric(true, gs);
        default: throw new IllegalArgumentException(name);
        }
    }

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] argv) throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isBlank()) System.out.println(run(line.split("\t")));
        }
    }

    static String run(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String s : argv) {
            String[] kv = s.split("=", 2);
            a.put(kv[0], kv[1]);
        }
        Data data = Data.create(new File(a.get("data")), StandardCharsets.UTF_8, ';');
        DataHandle handle = data.getHandle();
        Set<String> qis = new HashSet<>();
        for (String part : a.get("qis").split("\\|")) {
            String[] kv = part.split(":", 2);
            qis.add(kv[0]);
            data.getDefinition().setAttributeType(kv[0], Hierarchy.create(new File(kv[1]), StandardCharsets.UTF_8, ';'));
        }
        String sensitive = a.getOrDefault("sensitive", "-");
        for (int c = 0; c < handle.getNumColumns(); c++) {
            String name = handle.getAttributeName(c);
            if (qis.contains(name)) continue;
            data.getDefinition().setAttributeType(name, name.equals(sensitive)
                    ? AttributeType.SENSITIVE_ATTRIBUTE : AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        ARXConfiguration config = ARXConfiguration.create();
        String subsetPath = a.getOrDefault("subset", "-");
        DataSubset subset = subsetPath.equals("-") ? null
                : DataSubset.create(data, Data.create(new File(subsetPath), StandardCharsets.UTF_8, ';'));
        String model = a.get("model");
        switch (model) {
        case "prosecutor": config.addPrivacyModel(new ProfitabilityProsecutor()); break;
        case "prosecutor-no-attack": config.addPrivacyModel(new ProfitabilityProsecutorNoAttack()); break;
        case "journalist": config.addPrivacyModel(new ProfitabilityJournalist(subset)); break;
        case "journalist-no-attack": config.addPrivacyModel(new ProfitabilityJournalistNoAttack(subset)); break;
        default: throw new IllegalArgumentException(model);
        }
        String cb = a.getOrDefault("cb", "-");
        if (!cb.equals("-")) {
            String[] p = cb.split(",");
            config.setCostBenefitConfiguration(ARXCostBenefitConfiguration.create()
                    .setPublisherBenefit(Double.parseDouble(p[0]))
                    .setPublisherLoss(Double.parseDouble(p[1]))
                    .setAdversaryGain(Double.parseDouble(p[2]))
                    .setAdversaryCost(Double.parseDouble(p[3])));
        }
        config.setSuppressionLimit(Double.parseDouble(a.get("suppression")));
        config.setQualityModel(metric(a.get("metric"), Double.parseDouble(a.getOrDefault("gs", "0.5"))));
        config.setPracticalMonotonicity(Boolean.parseBoolean(a.getOrDefault("pm", "false")));
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        long cpu0 = bean.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        long cpu = bean.getCurrentThreadCpuTime() - cpu0;
        long wall = System.nanoTime() - t0;
        ARXLattice lattice = result.getLattice();
        int checked = 0, size = 0;
        for (ARXNode[] level : lattice.getLevels()) {
            for (ARXNode node : level) {
                size++;
                if (node.isChecked()) checked++;
            }
        }
        StringBuilder out = new StringBuilder("{");
        out.append("\"attributes\": [");
        String[] names = lattice.getBottom().getQuasiIdentifyingAttributes();
        for (int i = 0; i < names.length; i++) out.append(i > 0 ? ", " : "").append(q(names[i]));
        out.append("], ");
        ARXNode opt = result.getGlobalOptimum();
        out.append("\"found\": ").append(opt != null).append(", ");
        out.append("\"transformation\": ").append(opt == null ? "null" : Arrays.toString(opt.getTransformation())).append(", ");
        out.append("\"highest_score\": ").append(opt == null ? "null" : q(opt.getHighestScore().toString())).append(", ");
        out.append("\"criterion\": ").append(q(config.getPrivacyModels().iterator().next().toString())).append(", ");
        out.append("\"metric\": ").append(q(config.getQualityModel().toString())).append(", ");
        out.append("\"nodes_checked\": ").append(checked).append(", ");
        out.append("\"lattice_size\": ").append(size).append(", ");
        out.append("\"cpu_seconds\": ").append(cpu / 1e9).append(", ");
        out.append("\"time_seconds\": ").append(wall / 1e9);
        if (a.getOrDefault("nodes", "none").equals("all")) {
            out.append(", \"nodes\": [");
            for (int level = 0; level < lattice.getLevels().length; level++) {
                for (ARXNode node : lattice.getLevels()[level]) node.expand();
            }
            boolean first = true;
            for (ARXNode[] level : lattice.getLevels()) {
                for (ARXNode node : level) {
                    node.access().setChecked(false);
                    DataHandle h = result.getOutput(node, true);
                    InformationLoss<?> loss = node.getHighestScore();
                    out.append(first ? "" : ", ").append("{\"transformation\": ")
                       .append(Arrays.toString(node.getTransformation()))
                       .append(", \"anonymous\": ").append(q(node.getAnonymity().toString()))
                       .append(", \"score\": ").append(loss == null ? "null" : q(loss.toString())).append("}");
                    first = false;
                    h.release();
                }
            }
            out.append("]");
        }
        out.append("}");
        return out.toString();
    }
}
