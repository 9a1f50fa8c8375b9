import java.nio.charset.StandardCharsets;
import java.util.*;

import org.deidentifier.arx.*;
import org.deidentifier.arx.AttributeType.Hierarchy;
import org.deidentifier.arx.criteria.*;
import org.deidentifier.arx.criteria.EntropyLDiversity.EntropyEstimator;
import org.deidentifier.arx.framework.check.distribution.Distribution;
import org.deidentifier.arx.framework.check.groupify.HashGroupifyEntry;
import org.deidentifier.arx.framework.lattice.Transformation;
import org.deidentifier.arx.metric.Metric;

/**
 * Experiment (helper H1, issue 13): how often do emulated per-class hash-table orders give ARX's
 * own answer of EntropyLDiversity(GRASSBERGER).isAnonymous during ARX's search on Adult?
 * Usage: GrassbergerProbe SUPPRESSION L MODE; MODE "real" lets ARX search on its own answers,
 * "codesnap" (anonlab's emulation), "rowsnap", "rows", "emulate" on an emulated one. Prints the
 * optimum, its loss and the number of class checks where each emulation disagrees with ARX.
 */
public class GrassbergerProbe {
    static long diffRowsSnap, diffCodeSnap, diffRows, calls, diffFull, diffSorted, diffScratch, diffSnap, nonSorted;
    static int cap(int s, int start) { int c = start; while (s > (int) (c * 0.75f)) c <<= 1; return c; }
    static int[][] layout(int[] codes, int[] freqs, int cap) {
        int[] el = new int[cap]; int[] fr = new int[cap]; Arrays.fill(el, -1);
        for (int k = 0; k < codes.length; k++) {
            int i = codes[k] & (cap - 1);
            while (el[i] != -1) i = (i + 1) & (cap - 1);
            el[i] = codes[k]; fr[i] = freqs[k];
        }
        return new int[][]{el, fr};
    }
    static boolean check(int[] el, int[] fr, double c, EntropyEstimator e) {
        double s = 0;
        for (int i = 0; i < el.length; i++) if (el[i] != -1) { s += fr[i] * e.psi(fr[i]); if (c < s) return false; }
        return true;
    }
    static class Probe extends EntropyLDiversity {
        Probe(String a, double l) { super(a, l, EntropyEstimator.GRASSBERGER); }
        @Override public Probe clone() { return new Probe(getAttribute(), getL()); }
        @Override public boolean isAnonymous(Transformation<?> node, HashGroupifyEntry entry) {
            boolean real = super.isAnonymous(node, entry);
            boolean emulated = real;
            Distribution d = entry.distributions[index];
            if (d.size() < minSize) return real;
            calls++;
            int total = entry.count;
            double c = total * (getEstimator().psi(total) - Math.log(l));
            int[] b = d.getBuckets();
            int n = d.size(); int[] codes = new int[n]; int[] fr = new int[n]; int k = 0; double sum = 0;
            int prev = -1; boolean sorted = true;
            for (int i = 0; i < b.length; i += 2) if (b[i] != -1) { codes[k] = b[i]; fr[k] = b[i + 1]; sum += fr[k] * getEstimator().psi(fr[k]); if (b[i] < prev) sorted = false; prev = b[i]; k++; }
            if (!sorted) nonSorted++;
            CAPS.merge(n + "->" + (b.length/2), 1, Integer::sum);
            if ((sum <= c) != real) diffFull++;
            // sort by code
            Integer[] idx = new Integer[n]; for (int i = 0; i < n; i++) idx[i] = i;
            Arrays.sort(idx, (x, y) -> Integer.compare(codes[x], codes[y]));
            int[] sc = new int[n]; int[] sf = new int[n];
            for (int i = 0; i < n; i++) { sc[i] = codes[idx[i]]; sf[i] = fr[idx[i]]; }
            if (check(sc, sf, c, getEstimator()) != real) diffSorted++;
            int[][] L = layout(sc, sf, cap(n, 8));
            emulated = check(L[0], L[1], c, getEstimator()); if (emulated != real) diffScratch++;
            int[][] S = layout(sc, sf, cap(n, Math.max(1, Integer.highestOneBit(Math.max(1, n - 1)) << 1)));
            if (check(S[0], S[1], c, getEstimator()) != real) diffSnap++;
            int[] lv = node.getGeneralization();
            String rkey = key(entry.representative, lv);
            LinkedHashMap<Integer,Integer> first = FIRST.computeIfAbsent(Arrays.toString(lv), z -> firsts(lv)).get(rkey);
            Distribution dd = new Distribution();
            for (Map.Entry<Integer,Integer> e2 : first.entrySet()) { int code = e2.getKey(); int f = 0; for (int q = 0; q < n; q++) if (codes[q] == code) f = fr[q]; dd.add(code, f); }
            int[] bb = dd.getBuckets(); int[] e1 = new int[bb.length/2]; int[] f1 = new int[bb.length/2];
            for (int q = 0; q < bb.length; q += 2) { e1[q/2] = bb[q]; f1[q/2] = bb[q+1]; }
            boolean rowsAns = check(e1, f1, c, getEstimator()); if (rowsAns != real) diffRows++;
            int[] rc = new int[n]; int[] rf = new int[n]; int qq = 0;
            for (Map.Entry<Integer,Integer> e2 : first.entrySet()) { int code = e2.getKey(); for (int q = 0; q < n; q++) if (codes[q] == code) { rc[qq] = code; rf[qq] = fr[q]; } qq++; }
            Distribution ds = new Distribution(rc, rf); int[] b2 = ds.getBuckets(); int[] e2a = new int[b2.length/2]; int[] f2a = new int[b2.length/2];
            for (int q = 0; q < b2.length; q += 2) { e2a[q/2] = b2[q]; f2a[q/2] = b2[q+1]; }
            boolean rs = check(e2a, f2a, c, getEstimator()); if (rs != real) diffRowsSnap++;
            Distribution dc = new Distribution(sc, sf); int[] b3 = dc.getBuckets(); int[] e3 = new int[b3.length/2]; int[] f3 = new int[b3.length/2];
            for (int q = 0; q < b3.length; q += 2) { e3[q/2] = b3[q]; f3[q/2] = b3[q+1]; }
            boolean cs = check(e3, f3, c, getEstimator()); if (cs != real) diffCodeSnap++;
            if (MODE.equals("rowsnap")) return rs;
            if (MODE.equals("codesnap")) return cs;
            if (MODE.equals("rows")) return rowsAns;
            return MODE.equals("emulate") ? emulated : real;
        }
    }
    static String MODE = "real"; static TreeMap<String,Integer> CAPS = new TreeMap<>();
    static String[][] raw; static String[][][] hier; static int occ; static Map<String,Integer> occCode = new HashMap<>();
    static Map<String, Map<String, LinkedHashMap<Integer,Integer>>> FIRST = new HashMap<>();
    static final String[] QIS = {"sex","age","race","marital-status","education","native-country","workclass","salary-class"};
    static Map<String,Integer>[] hidx;
    static String key(int row, int[] lv) { StringBuilder sb = new StringBuilder(); for (int j = 0; j < QIS.length; j++) { sb.append(hier[j][hidx[j].get(raw[row][j])][lv[j]]).append('|'); } return sb.toString(); }
    static Map<String, LinkedHashMap<Integer,Integer>> firsts(int[] lv) {
        Map<String, LinkedHashMap<Integer,Integer>> m = new HashMap<>();
        for (int r = 0; r < raw.length; r++) m.computeIfAbsent(key(r, lv), z -> new LinkedHashMap<>()).putIfAbsent(occCode.get(raw[r][8]), 1);
        return m;
    }
    public static void main(String[] args) throws Exception {
        {
            java.util.List<String> lines = java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/work/main/data/adult/adult.csv"));
            String[] head = lines.get(0).split(";");
            int[] col = new int[9];
            for (int j = 0; j < 8; j++) col[j] = Arrays.asList(head).indexOf(QIS[j]);
            col[8] = Arrays.asList(head).indexOf("occupation");
            raw = new String[lines.size()-1][9];
            for (int r = 1; r < lines.size(); r++) { String[] p = lines.get(r).split(";", -1); for (int j = 0; j < 9; j++) raw[r-1][j] = p[col[j]]; occCode.putIfAbsent(raw[r-1][8], occCode.size()); }
            hier = new String[8][][]; hidx = new Map[8];
            for (int j = 0; j < 8; j++) { java.util.List<String> hl = java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/work/main/data/adult/hierarchy_" + QIS[j] + ".csv")); hier[j] = new String[hl.size()][]; hidx[j] = new HashMap<>(); for (int r = 0; r < hl.size(); r++) { hier[j][r] = hl.get(r).split(";", -1); hidx[j].put(hier[j][r][0], r); } }
        }
        String dir = "/work/main/data/adult/"; if (args.length > 2) MODE = args[2];
        Data data = Data.create(dir + "adult.csv", StandardCharsets.UTF_8, ';');
        for (String q : new String[]{"sex","age","race","marital-status","education","native-country","workclass","salary-class"})
            data.getDefinition().setAttributeType(q, Hierarchy.create(dir + "hierarchy_" + q + ".csv", StandardCharsets.UTF_8, ';'));
        data.getDefinition().setAttributeType("occupation", AttributeType.SENSITIVE_ATTRIBUTE);
        ARXConfiguration config = ARXConfiguration.create(Double.parseDouble(args[0]), Metric.createPrecomputedEntropyMetric(0.1d, false));
        config.addPrivacyModel(new Probe("occupation", Double.parseDouble(args[1])));
        ARXResult r = new ARXAnonymizer().anonymize(data, config);
        System.out.println(Arrays.toString(r.getGlobalOptimum().getTransformation()) + " " + r.getGlobalOptimum().getHighestScore());
        System.out.println("calls " + calls + " notSortedLayouts " + nonSorted + " diffFull " + diffFull + " diffSortedCode " + diffSorted + " diffScratchLayout " + diffScratch + " diffSnapLayout " + diffSnap + " diffRows " + diffRows + " diffRowsSnap " + diffRowsSnap + " diffCodeSnap " + diffCodeSnap); System.out.println(CAPS);
    }
}
