import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.deidentifier.arx.*;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.AttributeType.MicroAggregationFunction;
import org.deidentifier.arx.criteria.KAnonymity;

/** ARX 3.9.2 side of anonlab's aggregate_qi (issue 24): one quasi-identifier microaggregated inside the
 *  classes of a fixed transformation (each QI's minimum and maximum generalization at its level),
 *  the aggregated column written one value a line. Used to make tests/data/arx_aggregate_qi/.
 *  args: data.csv delimiter aggColumn(age, or age! without clustering) function(mean|geometric|median|mode|interval) ignoreMissing(true|false)
 *  k suppression out.csv sensitiveColumn [col=hierarchy.csv:level ...] */
public class ArxAggregate {
    public static void main(String[] a) throws Exception {
        char delim = a[1].charAt(0);
        Data data = Data.create(a[0], StandardCharsets.UTF_8, delim);
        String agg = a[2];
        boolean ignore = Boolean.parseBoolean(a[4]);
        MicroAggregationFunction f;
        switch (a[3]) {
            case "mean": f = MicroAggregationFunction.createArithmeticMean(ignore); break;
            case "geometric": f = MicroAggregationFunction.createGeometricMean(ignore); break;
            case "median": f = MicroAggregationFunction.createMedian(ignore); break;
            case "mode": f = MicroAggregationFunction.createMode(ignore); break;
            default: f = MicroAggregationFunction.createInterval(ignore);
        }
        DataDefinition def = data.getDefinition();
        String sensitive = a[8];
        DataHandle h = data.getHandle();
        for (int c = 0; c < h.getNumColumns(); c++) {
            def.setAttributeType(h.getAttributeName(c), AttributeType.INSENSITIVE_ATTRIBUTE);
        }
        if (!sensitive.equals("-")) def.setAttributeType(sensitive, AttributeType.INSENSITIVE_ATTRIBUTE);
        for (int i = 9; i < a.length; i++) {
            String col = a[i].substring(0, a[i].indexOf('='));
            String rest = a[i].substring(a[i].indexOf('=') + 1);
            String file = rest.substring(0, rest.lastIndexOf(':'));
            int level = Integer.parseInt(rest.substring(rest.lastIndexOf(':') + 1));
            def.setAttributeType(col, Hierarchy.create(file, StandardCharsets.UTF_8, ';'));
            def.setMinimumGeneralization(col, level);
            def.setMaximumGeneralization(col, level);
        }
        // "age" aggregates a clustered quasi-identifier (its hierarchy given among the levels);
        // "age!" one without clustering: not generalized, aggregated in the classes of the others
        boolean clustering = !a[2].endsWith("!");
        if (!clustering) {
            agg = agg.substring(0, agg.length() - 1);
            def.setAttributeType(agg, AttributeType.QUASI_IDENTIFYING_ATTRIBUTE);
        }
        def.setDataType(agg, DataType.INTEGER);
        def.setMicroAggregationFunction(agg, f, clustering);
        ARXConfiguration config = ARXConfiguration.create();
        config.addPrivacyModel(new KAnonymity(Integer.parseInt(a[5])));
        config.setSuppressionLimit(Double.parseDouble(a[6]));
        ARXResult result = new ARXAnonymizer().anonymize(data, config);
        DataHandle out = result.getOutput(result.getGlobalOptimum(), false);
        try (PrintWriter w = new PrintWriter(new OutputStreamWriter(new FileOutputStream(a[7]), StandardCharsets.UTF_8))) {
            int col = out.getColumnIndexOf(agg);
            System.out.println("optimum " + Arrays.toString(result.getGlobalOptimum().getTransformation()));
            for (int r = 0; r < out.getNumRows(); r++) {
                w.println(out.getValue(r, col));
            }
        }
    }
}
