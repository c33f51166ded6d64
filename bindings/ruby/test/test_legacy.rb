# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# tslock's bridge scheme beside the legacy Ruby lock gems on one key, each
# in its dialect: no overlap ever involves a tslock holder, and a legacy
# takeover of an expired tslock hold is reported to tslock as a loss.
require "helper"
require "legacy_peers"

class TestLegacy < TslockTest
  ROUND_S = 0.6

  # Two tslock threads and two legacy threads on one key for seconds;
  # returns [overlaps with a tslock holder inside, tslock entries, peer
  # entries].  The peers' leases are 1 s, tslock's 5 s: no lease runs out
  # while its holder is inside.
  def mixed_run(klass, url, key, seconds: ROUND_S,
                peer: ->(r) { LegacyPeers.make(klass, r, key, 1) })
    guard = Mutex.new
    inside = []
    overlaps = 0
    counts = Hash.new(0)
    enter = lambda do |who|
      guard.synchronize do
        overlaps += 1 if !inside.empty? && (who == :tslock || inside.include?(:tslock))
        inside << who
        counts[who] += 1
      end
      sleep 0.002
      guard.synchronize { inside.delete_at(inside.index(who)) }
    end
    stop = mono + seconds
    # Each side goes on past the round until it has been in at least once
    # (a loaded machine may keep it out for the round), up to a bound, so
    # "both got in" is a statement about liveness, not about speed.
    hard_stop = stop + 20
    going = ->(who) { mono < stop || (counts[who].zero? && mono < hard_stop) }
    c = Tslock::Client.new(url: url)
    threads = Array.new(2) do
      lock = c.lock(key, ttl: 5, scheme: :bridge, dialect: klass::DIALECT,
                         retry_delay: 0.005..0.01)
      Thread.new do
        while going.call(:tslock)
          begin
            # A wait may outlast the round: resque-lock-timeout leaves
            # its whole-second stamp behind when its hold crossed the
            # second it named, and the stamp reads as held for up to 2 s.
            lock.synchronize(timeout: 3) { enter.call(:tslock) }
          rescue Tslock::LostError
            # The gems GETSET after reading a key that was just released
            # as expired (nil.to_f is 0.0), overwriting a stamp tslock
            # had just written: tslock finds out at release.
            counts[:lost] += 1
          rescue Tslock::BusyError
            counts[:busy] += 1 # a stamp nobody holds, until it expires
          end
        end
      end
    end
    threads += Array.new(2) do
      Thread.new do
        r = Redis.new(path: url.sub("unix://", ""))
        theirs = peer.call(r)
        while going.call(:legacy)
          if theirs.try_lock
            enter.call(:legacy)
            theirs.unlock
          end
          sleep 0.004
        end
        r.close
      end
    end
    threads.each(&:join)
    [overlaps, counts[:tslock], counts[:legacy]]
  end

  # The server itself, then tests/oldredis playing each old version.
  def self.targets
    [["", nil]] + TslockTestServer::OLD_VERSIONS.map do |v|
      ["_on_#{v.tr('.', '_')}", v]
    end
  end

  # The socket of version (nil: the server itself); skips when the proxy
  # is not built.
  def socket_of(version)
    return TslockTestServer::SOCKET if version.nil?

    TslockTestServer.proxy(version) or
      skip "tests/oldredis not built (TSLOCK_OLDREDIS)"
  end

  LegacyPeers::ALL.each do |klass|
    name = klass.name.split("::").last.downcase
    targets.each do |suffix, version|
      define_method("test_bridge_beside_#{name}#{suffix}") do
        overlaps, ours, theirs = mixed_run(klass, "unix://#{socket_of(version)}", key,
                                           seconds: version ? ROUND_S / 2 : ROUND_S)
        assert_equal 0, overlaps
        assert_operator ours, :>, 0
        assert_operator theirs, :>, 0
      end
    end
  end

  # The checker above counts overlaps: beside a peer that ignores the key
  # (a broken scheme) it must see them.
  class Ignorer
    DIALECT = "redis-mutex"

    def try_lock
      true
    end

    def unlock; end
  end

  def test_overlap_count_sees_a_broken_peer
    overlaps, ours, theirs = mixed_run(Ignorer, url, key, peer: ->(_) { Ignorer.new })
    assert_operator overlaps, :>, 0
    assert_operator ours, :>, 0
    assert_operator theirs, :>, 0
  end

  # Each gem takes over an expired tslock hold (in threads: whole-second
  # stamps take up to three seconds to expire) and tslock reports a loss,
  # on the server and through each old version, all at once.
  def test_legacy_takeovers_are_losses
    sockets = self.class.targets.map { |_, v| [v || "7", socket_of(v)] }
    results = sockets.product(LegacyPeers::ALL).map do |(version, sock), klass|
      k = "#{key}:#{version}:#{klass.name}"
      c = Tslock::Client.new(url: "unix://#{sock}")
      lock = c.lock(k, ttl: 1, scheme: :bridge, dialect: klass::DIALECT)
      lock.lock
      Thread.new do
        r = Redis.new(path: sock)
        peer = LegacyPeers.make(klass, r, k, 30)
        deadline = mono + 5
        sleep 0.05 until peer.try_lock || mono > deadline
        taken = r.get(k)
        lost = begin
          lock.unlock
          :released
        rescue Tslock::LostError
          :lost
        end
        kept = r.get(k) == taken
        peer.unlock
        r.close
        ["#{klass} on #{version}", lost, kept]
      end
    end.map(&:value)
    results.each do |what, lost, kept|
      assert_equal :lost, lost, "#{what}: tslock's release after a takeover"
      assert kept, "#{what}: tslock deleted the taker's value"
    end
  end

  # doc/ruby.md's migration table: each row's test exists (on every
  # server), its preset is the library's, and its tslock call, run as
  # written, holds the key so that the gem's peer reads it as held, and
  # frees it for the peer after.
  def test_migration_table
    page = File.read(File.join(ENV.fetch("TSLOCK_SRCDIR"), "doc", "ruby.md"))
    table = page[/^\| gem call \|.*?\n\n/m] or flunk "doc/ruby.md: no migration table"
    rows = table.lines.drop(2).grep(/\S/).map { |l| l.split(" | ").map { |c| c.delete("`|").strip } }
    assert_equal LegacyPeers::ALL.map { |k| k::DIALECT }.sort, rows.map { |r| r[2] }.sort,
                 "one row per legacy gem"
    rows.each do |_, code, preset, test|
      self.class.targets.each do |suffix, _|
        assert self.class.method_defined?("#{test}#{suffix}"), "doc/ruby.md names #{test}#{suffix}"
      end
      assert Tslock::DIALECTS.key?(preset), "#{preset} is no preset of the library"
      assert_includes code, "dialect: \"#{preset}\""
      klass = LegacyPeers::ALL.find { |k| k::DIALECT == preset }
      k = "#{key}:#{preset}"
      peer = LegacyPeers.make(klass, redis, k, 5)
      seen = []
      inside = -> { seen << peer.try_lock }
      run = code.sub("{ }", "{ inside.call }")
      refute_equal code, run, "#{preset}: the row's call takes no block"
      eval(run, binding_for(client, k, inside)) # rubocop:disable Security/Eval
      assert_equal [false], seen, "#{preset}: the gem took the key tslock held"
      assert peer.try_lock, "#{preset}: the gem could not take the key after tslock"
      peer.unlock
    end
  end

  private

  def binding_for(client, key, inside)
    [client, key, inside] && binding
  end
end
