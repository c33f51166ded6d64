# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# One private redis-server on a Unix socket in a temporary directory,
# started when this file is loaded and stopped by its pid
# (TslockTestServer.stop_all), and tests/oldredis in front of it as the
# old versions; for the minitest suite (helper.rb) and make ruby-bench.
require "fileutils"
require "socket"
require "tmpdir"

module TslockTestServer
  def self.ping(path)
    s = UNIXSocket.new(path)
    s.write("PING\r\n")
    ok = s.readpartial(64).start_with?("+PONG")
    s.close
    ok
  rescue SystemCallError, IOError
    false
  end

  # Start a redis-server; returns [pid, socket path, dir].
  def self.start
    dir = Dir.mktmpdir("tslock-rbtest.")
    sock = File.join(dir, "redis.sock")
    conf = File.join(dir, "redis.conf")
    File.write(conf, "port 0\nunixsocket \"#{sock}\"\nunixsocketperm 700\n" \
                     "dir \"#{dir}\"\nsave \"\"\nappendonly no\n" \
                     "daemonize no\n")
    prog = ENV.fetch("REDIS_SERVER", "").empty? ? "redis-server" : ENV["REDIS_SERVER"]
    pid = Process.spawn(prog, conf, out: File.join(dir, "redis.log"),
                                    err: [:child, :out], in: File::NULL)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    until ping(sock)
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        Process.kill(:KILL, pid)
        raise "redis-server did not start (log in #{dir})"
      end
      sleep 0.01
    end
    [pid, sock, dir]
  end

  def self.stop(pid, dir)
    Process.kill(:TERM, pid)
    Process.wait(pid)
    FileUtils.rm_rf(dir)
  rescue Errno::ESRCH, Errno::ECHILD
    FileUtils.rm_rf(dir)
  end

  PID, SOCKET, DIR = start
  URL = "unix://#{SOCKET}"
  MAIN_PID = Process.pid
  # The old servers the suite plays through tests/oldredis.
  OLD_VERSIONS = %w[2.0.5 2.2.15 2.6.0].freeze
  @proxies = {}

  # tests/oldredis (TSLOCK_OLDREDIS) in front of the server, answering as
  # Redis version; its socket path, or nil when the proxy is not built.
  # One proxy per version, started when first asked for, stopped by its
  # pid when the run ends.
  def self.proxy(version)
    bin = ENV.fetch("TSLOCK_OLDREDIS", "")
    return nil unless File.executable?(bin)

    @proxies[version] ||= begin
      sock = File.join(DIR, "redis-#{version}.sock")
      r, w = IO.pipe
      pid = Process.spawn(bin, "--emulate", version, "--listen", sock,
                          "--upstream", SOCKET, "--ready-fd", w.fileno.to_s,
                          w => w, in: File::NULL)
      w.close
      line = r.gets.to_s
      r.close
      unless line.start_with?("ready")
        Process.kill(:KILL, pid)
        Process.wait(pid)
        raise "oldredis --emulate #{version} did not become ready: #{line}"
      end
      [pid, sock]
    end
    @proxies[version][1]
  end

  def self.stop_proxies
    @proxies.each_value do |pid, _|
      Process.kill(:TERM, pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end

  # Stop the proxies and the server (by their pids) in the process that
  # started them.
  def self.stop_all
    return unless Process.pid == MAIN_PID

    stop_proxies
    stop(PID, DIR)
  end
end
