# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# Lock cycles do not grow the process.  Each cycle takes and releases a
# lock, makes a Lock object the GC frees (with its libtslock client and
# lock, about 5 kB outside Ruby's heap), and raises and rescues an error.
#
# A process reaches its working size first: Ruby's heap pages, and the
# Locks made since the last GC with their library memory, which the GC
# frees in batches (RSS rises by some 10 MB over the first ~10k cycles,
# then stays flat to at least 200k).  So the cycles run in rounds until
# one round adds nothing (at most WARM_ROUNDS), and only then is growth
# measured over TSLOCK_RUBY_CYCLES more (20000, where the 2 MB bound is
# 100 bytes a cycle; make ruby-bench checks 100000 of its own).  A leak
# never settles, so it fails the bound either way; the checker is shown
# to fail on Locks kept alive.
require "helper"

class TestMemory < TslockTest
  ROUND = 5000
  WARM_ROUNDS = 12
  BOUND_KB = 2048

  def rss_kb
    GC.start
    File.read("/proc/self/status")[/^VmRSS:\s+(\d+)/, 1].to_i
  end

  def cycle(lock, spare, keep)
    lock.synchronize { nil }
    made = client.lock(key, ttl: 1, dialect: "redis-mutex", scheme: :bridge)
    keep&.push(made)
    spare.unlock
  rescue Tslock::StateError
    nil
  end

  # [kB grown over cycles after warming up, microseconds per cycle].
  def growth(cycles, keep: nil)
    lock = client.lock(key, ttl: 5)
    spare = client.lock("#{key}:spare")
    last = rss_kb
    WARM_ROUNDS.times do
      ROUND.times { cycle(lock, spare, nil) }
      now = rss_kb
      break if now <= last

      last = now
    end
    before = rss_kb
    t0 = mono
    cycles.times { cycle(lock, spare, keep) }
    [rss_kb - before, (mono - t0) / cycles * 1e6]
  end

  def setup
    skip "no /proc" unless File.exist?("/proc/self/status")
    # AddressSanitizer's quarantine holds freed memory on purpose.
    skip "RSS means nothing under AddressSanitizer" if ENV["LD_PRELOAD"].to_s.include?("asan")
  end

  def test_rss_stays_flat
    cycles = Integer(ENV.fetch("TSLOCK_RUBY_CYCLES", "20000"))
    grown, per = growth(cycles)
    puts format("\nmemory: %d cycles after warm-up, RSS %+d kB, %.1f us per cycle",
                cycles, grown, per)
    assert_operator grown, :<, BOUND_KB, "RSS grew #{grown} kB over #{cycles} cycles"
  end

  # The same check on a loop that keeps every Lock it makes: it must fail.
  def test_rss_check_sees_kept_locks
    keep = []
    grown, = growth(5000, keep: keep)
    assert_equal 5000, keep.size
    assert_operator grown, :>=, BOUND_KB, "5000 kept Locks grew RSS only #{grown} kB"
  end
end
