# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# The Ruby API of Tslock::Client and Tslock::Lock.
require "helper"
require "timeout"

class TestApi < TslockTest
  def test_block_form_releases_and_returns_the_block_value
    lock = client.lock(key, ttl: 5)
    assert_equal 42, lock.synchronize { assert lock.owned?; 42 }
    refute lock.held?
    assert_nil redis.get(key)
    assert_equal :done, lock.lock { :done }
  end

  def test_block_form_releases_when_the_block_raises
    lock = client.lock(key)
    assert_raises(ZeroDivisionError) { lock.synchronize { 1 / 0 } }
    refute lock.held?
    refute lock.locked?
  end

  def test_try_lock_and_a_bounded_wait
    a = client.lock(key, ttl: 5)
    b = client.lock(key, ttl: 5)
    assert a.try_lock
    refute b.try_lock
    assert b.locked?
    refute b.owned?
    t0 = mono
    e = assert_raises(Tslock::BusyError) { b.lock(timeout: 0.2) }
    assert_operator mono - t0, :>=, 0.19
    assert_equal Tslock::EBUSY, e.code
    assert_equal "TSLOCK_EBUSY", e.errname
    a.unlock
    assert_same b, b.lock(timeout: 1)
    b.unlock
  end

  def test_unlock_when_not_held_raises_state_error
    lock = client.lock(key)
    e = assert_raises(Tslock::StateError) { lock.unlock }
    assert_equal(-14, e.code)
    assert_match(/not held.*TSLOCK_ESTATE/, e.message)
  end

  def test_error_hierarchy
    assert_operator Tslock::UnreadableError, :<, Tslock::BusyError
    assert_operator Tslock::BusyError, :<, Tslock::Error
    assert_operator Tslock::TimeoutError, :<, Tslock::ConnectionError
    assert_operator Tslock::Error, :<, StandardError
    assert_equal(-2, Tslock::CODES["ELOST"])
  end

  def test_extend_time_left_and_fence
    lock = client.lock(key, ttl: 2, fencing: true)
    lock.lock
    f1 = lock.fence
    assert_kind_of Integer, f1
    assert_operator lock.time_left, :<=, 2.0
    lock.extend_by(10)
    assert_operator lock.time_left, :>, 10.0
    lock.extend_to(3)
    assert_operator lock.time_left, :<=, 3.0
    lock.unlock
    lock.synchronize { assert_equal f1 + 1, lock.fence }
  end

  def test_a_lost_lock_is_reported
    lock = client.lock(key, ttl: 5)
    lock.lock
    redis.del(key)
    refute lock.owned?
    assert_raises(Tslock::LostError) { lock.unlock }
    e = assert_raises(Tslock::LostError) { lock.synchronize { redis.set(key, "x") } }
    assert_equal Tslock::ELOST, e.code
  end

  def test_schemes_units_and_dialects
    { timestamp: /\A\d{13}\z/, token: /\A\h{32}\z/ }.each do |scheme, shape|
      lock = client.lock(key, scheme: scheme, unit: :ms)
      lock.synchronize do
        assert_equal scheme, lock.scheme_used
        assert_match shape, redis.get(key)
      end
    end
    gem = client.lock(key, scheme: :timestamp, dialect: "redis-lock-gem")
    gem.synchronize { assert_match(/\A\d+-#{Process.pid}-\d+\z/, redis.get(key)) }
    assert_equal "redis-lock-gem", gem.dialect
    assert_includes Tslock::DIALECTS, "resque-lock-timeout"
    e = assert_raises(Tslock::InvalidError) { client.lock(key, dialect: "{nope}") }
    assert_equal Tslock::EINVAL, e.code
    assert_raises(ArgumentError) { client.lock(key, scheme: :nope) }
  end

  def test_urls_and_tls_parameters
    assert_raises(Tslock::InvalidError) { Tslock::Client.from_url("redis://host:99999") }
    c = Tslock::Client.from_url(url)
    assert_match(/unix socket/, c.inspect)
    refute c.tls?
    assert_raises(ArgumentError) { Tslock::Client.new(url: url, ssl_params: { nope: 1 }) }
    tls = Tslock::Client.new(url: "rediss://127.0.0.1:1",
                             ssl_params: { ca_file: "/nonexistent/ca.pem",
                                           verify_mode: 1 })
    assert tls.tls?
    e = assert_raises(Tslock::Error) { tls.lock(key).try_lock }
    assert_includes [Tslock::ETLS, Tslock::EIO], e.code
  end

  def test_connection_refused
    c = Tslock::Client.new(url: "unix:///nonexistent/redis.sock")
    assert_raises(Tslock::ConnectionError) { c.lock(key).try_lock }
  end

  def test_renew_keeps_the_lease_and_reports_a_loss
    lost = Queue.new
    lock = client.lock(key, ttl: 0.3, renew: true, on_lost: ->(e) { lost << e })
    lock.synchronize do
      sleep 0.5
      assert lock.owned?
      assert_raises(Tslock::StateError) { lock.extend_by(1) }
    end
    assert_nil redis.get(key)
    lock.lock
    redis.del(key)
    e = Timeout.timeout(3) { lost.pop }
    assert_kind_of Tslock::LostError, e
    refute lock.owned?
    assert_raises(Tslock::LostError) { lock.unlock }
  end

  def test_read_write_locks_and_semaphores
    r1 = client.read_lock(key, ttl: 5)
    r2 = client.read_lock(key, ttl: 5)
    w = client.write_lock(key, ttl: 5)
    assert r1.try_lock
    assert r2.try_lock
    refute w.try_lock
    assert_equal 2, r1.holders
    r1.unlock
    r2.unlock
    assert w.try_lock
    w.unlock
    sem = Array.new(3) { client.semaphore("#{key}:s", 2, ttl: 5) }
    assert_equal [true, true, false], sem.map(&:try_lock)
    sem[0].unlock
    assert sem[2].try_lock
  end

  def test_a_lock_serves_one_thread_at_a_time
    a = client.lock(key)
    holder = client.lock(key)
    holder.lock
    t = Thread.new { a.lock(timeout: 2) rescue $! }
    sleep 0.1 until t.status == "sleep" || !t.alive?
    sleep 0.05
    e = assert_raises(Tslock::StateError) { a.try_lock }
    assert_match(/another thread/, e.message)
    holder.unlock
    assert_same a, t.value
    a.unlock
  end
end
