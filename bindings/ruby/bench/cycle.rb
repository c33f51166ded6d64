# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# cycle.rb - make ruby-bench: the Ruby binding beside C in the same run,
# on one private redis-server: the uncontended acquire+release cycle on
# one Lock (C: tests/bench_binding URL cycle N), as synchronize { } and as
# try_lock + unlock, and 8 contended threads, each with a Lock of its own
# on one key (C: bench_binding URL contend 8 MS KEY, 8 pthreads), as
# handoffs per second; then a 100k-cycle memory check (RSS after the
# cycles against after a warm-up).  The goal is within 1.3x of C
# uncontended; the ratio is printed, and the run fails only on memory.
#
#   ruby cycle.rb PATH/TO/bench_binding
# Environment: TSLOCK_BENCH_CYCLES (20000), TSLOCK_MEM_CYCLES (100000).
require "server"
require "tslock"

cbench = ARGV.fetch(0)
n = Integer(ENV.fetch("TSLOCK_BENCH_CYCLES", "20000"))
mem = Integer(ENV.fetch("TSLOCK_MEM_CYCLES", "100000"))
url = TslockTestServer::URL

def mono
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def c_figure(*args)
  out = IO.popen(args, &:read)
  raise "#{args.join(' ')} failed" unless $?.success?

  Float(out)
end

# ns per cycle of the block over n cycles.
def per_cycle(n)
  t0 = mono
  n.times { yield }
  (mono - t0) / n * 1e9
end

def contend(client, key, threads, seconds)
  stop = mono + seconds
  counts = Array.new(threads) do
    lock = client.lock(key, ttl: 10)
    Thread.new do
      k = 0
      while mono < stop
        lock.synchronize { nil }
        k += 1
      end
      k
    end
  end.map(&:value)
  counts.sum / seconds
end

def rss_kb
  GC.start
  File.read("/proc/self/status")[/^VmRSS:\s+(\d+)/, 1].to_i
end

failed = false
begin
  client = Tslock::Client.new(url: url)
  lock = client.lock("bench:cycle", ttl: 10)
  per_cycle(2000) { lock.synchronize { nil } }
  # The machine's load moves from second to second: C and Ruby take
  # turns, ROUNDS times, and the ratio is the median of the rounds'.
  rounds = 15
  each = [n / rounds, 1000].max
  figures = Array.new(rounds) do
    c = c_figure(cbench, url, "cycle", each.to_s)
    sync = per_cycle(each) { lock.synchronize { nil } }
    try = per_cycle(each) { lock.try_lock or raise "not taken"; lock.unlock }
    [c, sync, try]
  end
  median = ->(a) { a.sort[a.size / 2] }
  c, sync, try = figures.transpose.map(&median)
  puts format("uncontended cycle (median of %d rounds of %d): C %.1f us, " \
              "ruby synchronize %.1f us (%.2fx), try_lock+unlock %.1f us (%.2fx)",
              rounds, each, c / 1000, sync / 1000,
              median.call(figures.map { |f| f[1] / f[0] }), try / 1000,
              median.call(figures.map { |f| f[2] / f[0] }))
  cc = 0.0
  rc = 0.0
  2.times do
    cc += c_figure(cbench, url, "contend", "8", "1000", "bench:c8") / 2
    rc += contend(client, "bench:r8", 8, 1.0) / 2
  end
  puts format("8 contended threads (2 rounds of 1 s): C %.0f/s, ruby %.0f/s " \
              "handoffs (%.2fx)", cc, rc, rc / cc)

  spare = client.lock("bench:spare")
  cycle = lambda do
    lock.synchronize { nil }
    client.lock("bench:made", ttl: 1)
    spare.unlock
  rescue Tslock::StateError
    nil
  end
  20_000.times { cycle.call }
  before = rss_kb
  per = per_cycle(mem) { cycle.call }
  grown = rss_kb - before
  puts format("memory: %d cycles (%.1f us each) after a 20k warm-up, RSS %+d kB",
              mem, per / 1000, grown)
  if grown > 4096
    puts "FAIL: the RSS grew more than 4 MiB"
    failed = true
  end
ensure
  TslockTestServer.stop_all
end
exit(failed ? 1 : 0)
