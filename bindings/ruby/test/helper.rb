# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# What the tslock minitest suite shares: one private redis-server on a
# Unix socket in a temporary directory, started here and stopped by its
# pid when the run ends, a fresh key per test, and a plain redis-rb
# connection (Debian's ruby-redis) for looking at keys and for the legacy
# peers.
require "minitest/autorun"
require "securerandom"
require "tslock"

require "server"

Minitest.after_run { TslockTestServer.stop_all }

class TslockTest < Minitest::Test
  def url
    TslockTestServer::URL
  end

  def client
    @client ||= Tslock::Client.new(url: url)
  end

  def key
    @key ||= "rbtest:#{SecureRandom.hex(6)}"
  end

  def redis
    require "redis"
    @redis ||= Redis.new(path: TslockTestServer::SOCKET)
  end

  def mono
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def teardown
    @redis&.close
  end
end
