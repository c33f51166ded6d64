# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# Waits release the GVL, and Thread#raise, Thread#kill, Timeout.timeout and
# Ctrl-C end them at once, with nothing left held.
require "helper"
require "rbconfig"
require "timeout"

class TestInterrupts < TslockTest
  class Stop < StandardError; end

  def hold
    holder = client.lock(key, ttl: 10)
    holder.lock
    holder
  end

  # After the interrupted wait: the holder still holds, and once it lets
  # go the key is free (the waiter took nothing on its way out).
  def assert_nothing_taken(holder, waiter)
    refute waiter.held?
    assert holder.owned?
    holder.unlock
    sleep 0.1
    assert_nil redis.get(key)
  end

  def test_other_threads_run_while_one_waits
    holder = hold
    ticks = 0
    ticker = Thread.new { loop { ticks += 1; sleep 0.01 } }
    assert_raises(Tslock::BusyError) { client.lock(key).lock(timeout: 0.3) }
    ticker.kill
    assert_operator ticks, :>=, 10
    holder.unlock
  end

  def test_thread_raise_ends_a_wait
    holder = hold
    waiter = client.lock(key)
    t = Thread.new { Thread.current.report_on_exception = false; waiter.lock }
    sleep 0.2
    t0 = mono
    t.raise(Stop)
    assert_raises(Stop) { t.join }
    assert_operator mono - t0, :<, 0.5
    assert_nothing_taken(holder, waiter)
    assert waiter.try_lock # the lock object is usable again
    waiter.unlock
  end

  def test_thread_kill_ends_a_wait
    holder = hold
    waiter = client.lock(key)
    t = Thread.new { waiter.synchronize { flunk "taken" } }
    sleep 0.2
    t.kill
    assert t.join(0.5)
    assert_nothing_taken(holder, waiter)
  end

  def test_timeout_ends_a_wait
    holder = hold
    waiter = client.lock(key)
    t0 = mono
    assert_raises(Timeout::Error) { Timeout.timeout(0.3) { waiter.lock } }
    assert_operator mono - t0, :<, 0.8
    assert_nothing_taken(holder, waiter)
  end

  def test_ctrl_c_ends_a_wait
    holder = hold
    script = <<~RUBY
      require "tslock"
      l = Tslock::Client.new(url: ARGV[0]).lock(ARGV[1])
      $stdout.sync = true
      begin
        puts "waiting"
        l.lock
        puts "taken"
      rescue Interrupt
        puts l.held? ? "held" : "interrupted"
      end
    RUBY
    IO.popen([RbConfig.ruby, "-w", "-e", script, url, key], err: [:child, :out]) do |io|
      assert_equal "waiting\n", io.gets
      sleep 0.3
      t0 = mono
      Process.kill(:INT, io.pid)
      assert_equal "interrupted\n", io.gets
      assert_operator mono - t0, :<, 1.0
    end
    assert holder.owned?
    holder.unlock
  end
end
