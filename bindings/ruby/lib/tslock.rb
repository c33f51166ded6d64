# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# tslock - mutual exclusion over Redis, in every lock dialect, for Ruby.
#
# A Ruby face for libtslock (doc/ruby.md):
#
#   client = Tslock::Client.new(url: "redis://localhost:6379/0")
#   client.lock("nightly-report", ttl: 60).synchronize { make_report }
#
# Every decision about the lock is the library's; this file only turns
# Ruby's seconds and keywords into its milliseconds and options.
#
# Threads: a Client may be shared by any number of threads; a Lock serves
# one thread at a time (each Lock has its own connection).  Waits release
# the GVL, and Thread#raise, Thread#kill, Timeout.timeout and Ctrl-C end
# them at once with nothing held.
#
# fork: a child uses none of its parent's connections; each Lock connects
# again when first used there.  A hold belongs to the process that took it:
# in the child an inherited Lock is not held (owned? is false, unlock
# raises StateError) and the parent's hold is untouched.
require "tslock/tslock_ext"

module Tslock
  # The version of libtslock this gem is released with (tests/test_doc_facts.sh
  # holds it to the build's); Tslock.library_version is the one loaded.
  VERSION = "1.2.0"

  SCHEMES = { auto: 0, timestamp: 1, token: 2, bridge: 3 }.freeze
  UNITS = { ms: 0, s: 1, float: 2 }.freeze
  RW = { off: 0, exclusive: 1, shared: 2 }.freeze

  # redis-rb's ssl_params (OpenSSL::SSL::SSLContext#set_params names, as
  # redis-client takes them) => the names tslock_tls_set() knows.
  SSL_PARAMS = {
    ca_file: "cacert", ca_path: "cacertdir", cert: "cert", key: "key",
    key_password: "key_password", hostname: "sni",
    verify_mode: "verify", verify_hostname: "check_hostname"
  }.freeze

  def self.ms(seconds, what)
    raise ArgumentError, "#{what}: seconds expected, got #{seconds.inspect}" \
      unless seconds.is_a?(Numeric) && seconds >= 0

    (seconds * 1000).ceil
  end

  def self.ssl_value(name, value)
    case name
    when :verify_mode
      # OpenSSL::SSL::VERIFY_NONE is 0, VERIFY_PEER 1.
      return value if value.is_a?(String)

      value.to_i.zero? ? "none" : "required"
    when :verify_hostname then value ? "true" : "false"
    else value.to_s
    end
  end

  # Where to connect: one URL read by the library's own parser
  # (redis://, rediss://, unix://, redis+sentinel://).
  class Client
    # url: as redis-rb takes it.  ssl_params: redis-rb's TLS settings
    # (ca_file:, ca_path:, cert:, key:, verify_mode:, verify_hostname:,
    # hostname:), which also turn TLS on.  connect_timeout:, timeout:
    # seconds (redis-rb's names; 0 for none).
    def initialize(url: "redis://localhost:6379/0", ssl_params: nil,
                   connect_timeout: 5.0, timeout: 5.0)
      _setup(url, Tslock.ms(connect_timeout, "connect_timeout"),
             Tslock.ms(timeout, "timeout"))
      (ssl_params || {}).each do |name, value|
        tls = SSL_PARAMS[name.to_sym] or
          raise ArgumentError, "ssl_params: unknown #{name.inspect} " \
                               "(known: #{SSL_PARAMS.keys.join(', ')})"
        _tls_set(tls, Tslock.ssl_value(name.to_sym, value))
      end
    end

    def self.from_url(url, **options)
      new(url: url, **options)
    end

    def inspect
      "#<Tslock::Client #{describe}>"
    end

    # A lock on key name; nothing is sent until it is used.
    #
    # ttl: the lease in seconds (30).  timeout: how long lock and
    # synchronize wait, in seconds; nil waits for ever.  scheme: :auto,
    # :token, :timestamp or :bridge.  unit: :ms, :s or :float (timestamp
    # and bridge stamps).  dialect: a preset of Tslock::DIALECTS
    # ("redis-objects", "redis-mutex", "redis-lock-gem",
    # "resque-lock-timeout", ...) or a format string.  renew: true (a third
    # of the ttl) or an interval in seconds, with on_lost: a callable given
    # the LostError.  fencing:, fair:, reentrant:, wakeup:, retry_delay:
    # (a Range of seconds), takeover_grace:, release_margin: (seconds).
    def lock(name, **options)
      Lock.new(self, name, **options)
    end

    def read_lock(name, **options)
      Lock.new(self, name, rw: :shared, **options)
    end

    def write_lock(name, **options)
      Lock.new(self, name, rw: :exclusive, **options)
    end

    def semaphore(name, permits, **options)
      Lock.new(self, name, permits: permits, **options)
    end
  end

  # One named lock, used through its own connection.
  class Lock
    attr_reader :client, :ttl, :timeout

    def initialize(client, name, ttl: 30, timeout: nil, scheme: :auto,
                   unit: nil, dialect: nil, renew: false, on_lost: nil,
                   fencing: false, fair: false, reentrant: false,
                   wakeup: nil, rw: :off, permits: 0, retry_delay: nil,
                   takeover_grace: nil, release_margin: nil)
      @client = client
      @ttl = ttl
      @timeout = timeout
      @renew = renew
      @on_lost = on_lost
      @loss_thread = nil
      _setup(client, name.to_s, choice(SCHEMES, scheme, "scheme"),
             Tslock.ms(ttl, "ttl"),
             unit.nil? ? -1 : choice(UNITS, unit, "unit"),
             dialect&.to_s, fencing, fair, reentrant, wakeup,
             choice(RW, rw, "rw"), Integer(permits), retry_ms(retry_delay),
             takeover_grace.nil? ? -1 : Tslock.ms(takeover_grace, "takeover_grace"),
             release_margin.nil? ? -1 : Tslock.ms(release_margin, "release_margin"))
    end

    def inspect
      "#<Tslock::Lock #{name.inspect} #{held? ? 'held' : 'not held'}>"
    end

    # Take the lock, waiting up to timeout seconds (nil: for ever); with a
    # block, yield and release in ensure.  Raises BusyError when the wait
    # ran out.  Without a block returns self, held.
    def lock(timeout: @timeout, &block)
      return synchronize(timeout: timeout, &block) if block

      raise Tslock.error_for(EBUSY, "lock '#{name}' is held by another owner") \
        unless acquire(timeout)

      self
    end

    # Run the block holding the lock; released when it ends, however it
    # ends.  A lock lost while the block ran raises LostError after it.
    def synchronize(timeout: @timeout)
      raise ArgumentError, "synchronize needs a block" unless block_given?

      _synchronize(wait_ms(timeout)) do
        start_renewing if @renew
        yield self
      end
    end

    # One try (or a wait of timeout seconds): true when taken, else false.
    def try_lock(timeout: 0)
      acquire(timeout)
    end

    # Whether anyone holds the key now (one GET).
    def locked?
      value, ttl = peek
      !value.empty? || ttl != -2
    end

    # Seconds left of our lease as the server or the stamp says; nil when
    # not held or not ours any more.
    def time_left
      ms = _time_left
      ms && ms / 1000.0
    end

    # Lengthen the lease by seconds from what is left now.
    def extend_by(seconds)
      left = _time_left or
        raise Tslock.error_for(ELOST, "lock '#{name}' is not ours any more")

      _extend(left + Tslock.ms(seconds, "extend_by"))
    end

    # Set the lease to seconds from now (the library's tslock_extend()).
    def extend_to(seconds)
      _extend(Tslock.ms(seconds, "extend_to"))
    end

    # When the lease of the hold (or of the holder last seen) runs out.
    def expires_at
      ms = _expires_ms
      ms.positive? ? Time.at(ms / 1000r) : nil
    end

    private

    def acquire(timeout)
      taken = _acquire(wait_ms(timeout))
      start_renewing if taken && @renew
      taken
    end

    def wait_ms(timeout)
      timeout.nil? ? -1 : Tslock.ms(timeout, "timeout")
    end

    def start_renewing
      interval = @renew == true ? 0 : Tslock.ms(@renew, "renew")
      _renew(interval)
      on_lost = @on_lost
      @loss_thread = Thread.new do
        Thread.current.report_on_exception = false
        code, detail = _wait_loss
        on_lost&.call(Tslock.error_for(code, detail)) if code
      end
    end

    def choice(table, value, what)
      table.fetch(value.to_sym) do
        raise ArgumentError, "#{what}: #{value.inspect} is not one of " \
                             "#{table.keys.join(', ')}"
      end
    end

    def retry_ms(range)
      return nil if range.nil?

      [Tslock.ms(range.min, "retry_delay"), Tslock.ms(range.max, "retry_delay")]
    end
  end
end
