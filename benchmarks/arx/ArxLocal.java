import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.deidentifier.arx.ARXAnonymizer;
import org.deidentifier.arx.ARXConfiguration;
import org.deidentifier.arx.ARXPopulationModel;
import org.deidentifier.arx.ARXPopulationModel.Region;
import org.deidentifier.arx.ARXProcessStatistics;
import org.deidentifier.arx.ARXResult;
import org.deidentifier.arx.AttributeType;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.Data;
import org.deidentifier.arx.DataHandle;
import org.deidentifier.arx.criteria.DistinctLDiversity;
import org.deidentifier.arx.criteria.EntropyLDiversity;
import org.deidentifier.arx.criteria.EqualDistanceTCloseness;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.criteria.KMap;
import org.deidentifier.arx.criteria.KMap.CellSizeEstimator;
import org.deidentifier.arx.criteria.RecursiveCLDiversity;
import org.deidentifier.arx.metric.Metric;

/**
 * ARX 3.9's local recoding (ARXResult.optimizeIterative) on the cases of ARX's own
 * TestAnonymizationLocalRecoding, for tests/test_local_recoding.py and
 * benchmarks/local_recoding.py (issue 24).
 *
 * Each case is set up as ARX's AbstractAnonymizationTest does for a local-recoding case: the data
 * read with ';', every file "<dataset>_hierarchy_<attribute>.csv" beside it made that
 * attribute's hierarchy (a quasi-identifier), except the case's sensitive attribute, which is
 * sensitive where the case has an l-diversity or t-closeness model and otherwise keeps no type;
 * ARXConfiguration.create(1.0, Metric.createLossMetric(0.05)) with the case's models;
 * anonymize, getOutput, then optimizeIterative(output, 0.05, 100, 0.05).
 *
 * args: dataFolder  outFolder  warmups  repeats  case...
 * A case is the index of ARX's test case (0-10); the cases on ARX's atus and fars data
 * (1, 2, 9, 10) need data ARX does not distribute and are reported as missing when the file is
 * absent. For every case this prints one JSON line: the thread CPU seconds of each timed run
 * (anonymize + getOutput + optimizeIterative in this JVM, the data read and its hierarchies set
 * before each run, outside the clock), the hash ARX's test computes over the output's cells,
 * the full-domain optimum and every local-recoding step (transformation, records transformed);
 * it writes the last run's output table to outFolder/case<N>.csv (';'-separated, header first).
 */
public class ArxLocal {

    static final String[] DATASETS = {
        "adult", "atus", "atus", "adult", "adult", "adult", "adult", "adult", "adult", "fars",
        "fars"
    };

    static final String[] SENSITIVE = {
        "occupation", "Highest level of school completed", "Highest level of school completed",
        "occupation", "occupation", "occupation", "occupation", "occupation", "occupation", "",
        "istatenum"
    };

    static ARXConfiguration config(int id) {
        ARXConfiguration config = ARXConfiguration.create(1d, Metric.createLossMetric(0.05d));
        switch (id) {
            case 0:
                config.addPrivacyModel(new EntropyLDiversity("occupation", 5));
                break;
            case 1:
                config.addPrivacyModel(new DistinctLDiversity(SENSITIVE[1], 5));
                break;
            case 2:
                config.addPrivacyModel(new RecursiveCLDiversity(SENSITIVE[2], 4d, 3));
                break;
            case 3:
                config.addPrivacyModel(new EqualDistanceTCloseness("occupation", 0.2d));
                config.addPrivacyModel(new KAnonymity(5));
                break;
            case 4:
                config.addPrivacyModel(new EqualDistanceTCloseness("occupation", 0.2d));
                config.addPrivacyModel(new KAnonymity(100));
                break;
            case 5:
                config.addPrivacyModel(new KAnonymity(100));
                break;
            case 6:
                config.addPrivacyModel(new KAnonymity(5));
                break;
            case 7:
                config.addPrivacyModel(new KMap(3, 0.01d, ARXPopulationModel.create(Region.USA),
                                                CellSizeEstimator.ZERO_TRUNCATED_POISSON));
                break;
            case 8:
                config.addPrivacyModel(new KMap(1000, 0.01d, ARXPopulationModel.create(Region.USA),
                                                CellSizeEstimator.ZERO_TRUNCATED_POISSON));
                break;
            default:
                throw new IllegalArgumentException("case " + id + " is not run by this harness");
        }
        config.setPracticalMonotonicity(false);
        return config;
    }

    static boolean sensitiveModel(int id) {
        return id <= 4;
    }

    static Data load(File folder, int id) throws Exception {
        String name = DATASETS[id];
        Data data = Data.create(new File(folder, name + ".csv"), StandardCharsets.UTF_8, ';');
        Pattern pattern = Pattern.compile(Pattern.quote(name) + "_hierarchy_(.+)\\.csv");
        File[] files = folder.listFiles();
        Arrays.sort(files);
        for (File file : files) {
            Matcher m = pattern.matcher(file.getName());
            if (!m.matches()) continue;
            String attribute = m.group(1);
            if (!attribute.equalsIgnoreCase(SENSITIVE[id])) {
                data.getDefinition().setAttributeType(attribute,
                        Hierarchy.create(file, StandardCharsets.UTF_8, ';'));
            } else if (sensitiveModel(id)) {
                data.getDefinition().setAttributeType(attribute,
                                                      AttributeType.SENSITIVE_ATTRIBUTE);
            }
        }
        return data;
    }

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static String csvCell(String s) {
        if (s.indexOf(';') >= 0 || s.indexOf('"') >= 0 || s.indexOf('\n') >= 0) {
            return "\"" + s.replace("\"", "\"\"") + "\"";
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        File folder = new File(args[0]);
        File out = new File(args[1]);
        out.mkdirs();
        int warmups = Integer.parseInt(args[2]);
        int repeats = Integer.parseInt(args[3]);
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        for (int a = 4; a < args.length; a++) {
            int id = Integer.parseInt(args[a]);
            if (!new File(folder, DATASETS[id] + ".csv").exists()) {
                System.out.println("{\"case\": " + id + ", \"dataset\": " + q(DATASETS[id])
                                   + ", \"missing\": true}");
                continue;
            }
            List<Double> cpus = new ArrayList<>();
            ARXResult result = null;
            DataHandle output = null;
            ARXProcessStatistics steps = null;
            for (int run = 0; run < warmups + repeats; run++) {
                Data data = load(folder, id);
                ARXConfiguration config = config(id);
                long cpu0 = bean.getCurrentThreadCpuTime();
                result = new ARXAnonymizer().anonymize(data, config);
                output = result.getOutput();
                steps = result.optimizeIterative(output, 0.05d, 100, 0.05d);
                long cpu = bean.getCurrentThreadCpuTime() - cpu0;
                if (run >= warmups) cpus.add(cpu / 1e9);
            }
            int hash = 23;
            for (int row = 0; row < output.getNumRows(); row++) {
                for (int col = 0; col < output.getNumColumns(); col++) {
                    hash = (37 * hash) + output.getValue(row, col).hashCode();
                }
            }
            File csv = new File(out, "case" + id + ".csv");
            try (PrintWriter w = new PrintWriter(new OutputStreamWriter(
                    new FileOutputStream(csv), StandardCharsets.UTF_8))) {
                StringBuilder line = new StringBuilder();
                for (int col = 0; col < output.getNumColumns(); col++) {
                    line.append(col == 0 ? "" : ";").append(csvCell(output.getAttributeName(col)));
                }
                w.print(line.append('\n'));
                for (int row = 0; row < output.getNumRows(); row++) {
                    line.setLength(0);
                    for (int col = 0; col < output.getNumColumns(); col++) {
                        line.append(col == 0 ? "" : ";").append(csvCell(output.getValue(row, col)));
                    }
                    w.print(line.append('\n'));
                }
            }
            StringBuilder json = new StringBuilder();
            json.append("{\"case\": ").append(id);
            json.append(", \"dataset\": ").append(q(DATASETS[id]));
            json.append(", \"hash\": ").append(hash);
            json.append(", \"optimizable\": ").append(result.isOptimizable(output));
            String[] qis = result.getGlobalOptimum() == null ? new String[0]
                    : result.getDataDefinition().getQuasiIdentifyingAttributes()
                            .toArray(new String[0]);
            json.append(", \"optimum\": ").append(result.getGlobalOptimum() == null ? "null"
                    : Arrays.toString(result.getGlobalOptimum().getTransformation()));
            json.append(", \"qi_order\": [");
            if (result.getGlobalOptimum() != null) {
                String[] names = result.getGlobalOptimum().getQuasiIdentifyingAttributes();
                for (int i = 0; i < names.length; i++) {
                    json.append(i == 0 ? "" : ", ").append(q(names[i]));
                }
            }
            json.append("], \"steps\": [");
            for (int i = 0; i < steps.getNumberOfSteps(); i++) {
                ARXProcessStatistics.Step s = steps.getStep(i);
                json.append(i == 0 ? "" : ", ").append("{\"transformation\": ")
                        .append(Arrays.toString(s.getTransformation()))
                        .append(", \"records\": ").append(s.getNumberOfRecordsTransformed())
                        .append("}");
            }
            json.append("], \"cpu_seconds\": ").append(cpus.toString());
            json.append(", \"rows\": ").append(output.getNumRows());
            json.append(", \"qis\": ").append(qis.length);
            json.append("}");
            System.out.println(json);
        }
    }
}
