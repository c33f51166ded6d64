// SPDX-License-Identifier: BSD-3-Clause
package tslock;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * make bench: the binding beside the C library on the same server in the
 * same run, alternating, medians of five: uncontended acquire+release (ns
 * per cycle, and the ratio, which should be within 1.3) and contended
 * handoffs per second with 8 and 64 threads on one key.
 * Arguments: the path of tests/bench_binding.
 */
public final class BenchRun {
    private BenchRun() {}

    static double c(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out;
        try (BufferedReader r = new BufferedReader(
                 new InputStreamReader(p.getInputStream()))) {
            out = r.readLine();
        }
        if (p.waitFor() != 0 || out == null)
            throw new IllegalStateException("bench_binding failed: " + out);
        return Double.parseDouble(out.trim());
    }

    static double javaCycle(Client client, int n) {
        TsLock lock = client.lock("bench:binding:java");
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            if (!lock.tryLock())
                throw new IllegalStateException("not taken");
            lock.unlock();
        }
        return (double) (System.nanoTime() - t0) / n;
    }

    static double javaContend(Client client, int threads, int ms, String key)
        throws Exception {
        AtomicLong total = new AtomicLong();
        long t0 = System.nanoTime(), end = t0 + ms * 1_000_000L;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(() -> {
                TsLock lock = client.lock(key);
                long n = 0;
                try {
                    while (System.nanoTime() < end) {
                        if (!lock.tryLock(1000, java.util.concurrent.TimeUnit.MILLISECONDS))
                            continue;
                        n++;
                        lock.unlock();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                total.addAndGet(n);
            });
            ts[i].start();
        }
        for (Thread t : ts)
            t.join();
        return total.get() * 1e9 / (System.nanoTime() - t0);
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    public static void main(String[] args) throws Exception {
        String bench = args[0], url = Servers.url();
        int n = 3000, reps = 7;
        try (Client client = Client.fromUrl(url)) {
            javaCycle(client, 20000); /* warm the JIT (C2) and the pool */
            c(bench, url, "cycle", "2000");
            double[] cs = new double[reps], js = new double[reps];
            for (int i = 0; i < reps; i++) {
                cs[i] = c(bench, url, "cycle", String.valueOf(n));
                js[i] = javaCycle(client, n);
            }
            double cm = median(cs), jm = median(js);
            System.out.printf("java binding, uncontended acquire+release on "
                                  + "unix socket (median of %d x %d):%n"
                                  + "  C %.1f us, Java %.1f us: %.2fx C%n",
                              reps, n, cm / 1000, jm / 1000, jm / cm);
            for (int threads : new int[] {8, 64}) {
                String key = "bench:binding:contend:" + threads;
                double cc = c(bench, url, "contend", String.valueOf(threads),
                              "2000", key);
                double jc = javaContend(client, threads, 2000, key);
                System.out.printf("  contended, %d threads on one key (2 s): "
                                      + "C %.0f handoffs/s, Java %.0f "
                                      + "handoffs/s (%.2fx C)%n",
                                  threads, cc, jc, jc / cc);
            }
        }
    }
}
