# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# A fork child inherits no connection and no hold: it connects again when
# first used, and the parent's hold is untouched.
require "helper"

class TestFork < TslockTest
  def in_child
    pid = fork do
      ok = begin
        yield
      rescue Exception => e # rubocop:disable Lint/RescueException
        warn "child: #{e.class}: #{e.message}"
        false
      end
      exit!(ok ? 0 : 1)
    end
    Process.wait(pid)
    assert $?.success?, "the child's checks failed"
  end

  def test_a_child_holds_nothing_and_connects_again
    lock = client.lock(key, ttl: 10)
    other = client.lock("#{key}:other")
    other.synchronize {} # connected before the fork
    lock.lock
    in_child do
      !lock.held? && !lock.owned? &&
        (begin; lock.unlock; false; rescue Tslock::StateError; true; end) &&
        !lock.try_lock &&
        other.synchronize { other.owned? } &&
        client.lock("#{key}:new").synchronize { true }
    end
    assert lock.owned?
    assert other.try_lock # the parent's connection still works
    other.unlock
    lock.unlock
  end

  def test_a_child_of_a_renewing_holder
    lock = client.lock(key, ttl: 0.5, renew: true)
    lock.lock
    in_child { !lock.held? && lock.try_lock == false }
    sleep 0.6
    assert lock.owned?
    lock.unlock
  end
end
