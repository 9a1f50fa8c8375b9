import com.carrotsearch.hppc.IntIntOpenHashMap;
import java.util.*;
public class HppcOrder {
  public static void main(String[] a) throws Exception {
    java.lang.reflect.Field f = Class.forName("com.carrotsearch.hppc.HashContainerUtils").getDeclaredField("PERTURBATIONS");
    f.setAccessible(true);
    int[] p = (int[]) f.get(null);
    System.out.println(Arrays.toString(p));
    Random r = new Random(3);
    for (int t = 0; t < 200; t++) {
      IntIntOpenHashMap m = new IntIntOpenHashMap();
      int n = 1 + r.nextInt(80); StringBuilder in = new StringBuilder();
      for (int i = 0; i < n; i++) { int k = r.nextInt(300); m.putOrAdd(k, 1, 1); in.append(k).append(i+1<n?",":""); }
      StringBuilder out = new StringBuilder();
      for (int i = 0; i < m.allocated.length; i++) if (m.allocated[i]) out.append(m.keys[i]).append(",");
      System.out.println(in + " " + out);
    }
  }
}
