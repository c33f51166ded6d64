# SPDX-License-Identifier: BSD-3-Clause
# frozen_string_literal: true

# Legacy Ruby lock clients, written for these tests from each gem's
# documented behaviour (not from its code), over redis-rb.  Each holds one
# key the way its gem does, so tslock's bridge scheme can be run beside it.
# try_lock returns true when taken; unlock releases as the gem does.
require "redis"

module LegacyPeers
  # redis-objects' Redis::Lock up to 1.4.1: the value is the expiry in
  # float seconds with the +1 (the literal 1 without an expiration);
  # SETNX, else GET, and when expired GETSET, won when the old value
  # returned was expired too.  Unlock deletes while its own expiry has
  # not passed.
  class RedisObjectsLock
    DIALECT = "redis-objects"

    def initialize(redis, key, expiration:)
      @redis = redis
      @key = key
      @expiration = expiration
    end

    def try_lock
      @expires = Time.now.to_f + @expiration + 1
      return true if @redis.setnx(@key, @expires)

      old = @redis.get(@key).to_f
      return false unless old < Time.now.to_f

      @redis.getset(@key, @expires).to_f < Time.now.to_f
    end

    def unlock
      @redis.del(@key) if @expires > Time.now.to_f
    end
  end

  # redis-mutex: the expiry in float seconds without the +1; takeover by
  # GETSET when expired; unlock deletes only when the key still holds
  # exactly the string it wrote.
  class RedisMutex
    DIALECT = "redis-mutex"

    def initialize(redis, key, expire:)
      @redis = redis
      @key = key
      @expire = expire
    end

    def try_lock
      now = Time.now.to_f
      @expires_at = now + @expire
      return true if @redis.setnx(@key, @expires_at)
      return false if @redis.get(@key).to_f > now

      @redis.getset(@key, @expires_at).to_f < now
    end

    def unlock
      @redis.del(@key) if @redis.get(@key) == @expires_at.to_s
    end
  end

  # The redis-lock gem: "<seconds+timeout+1>-<pid>-<thread id>", whole
  # seconds; an expired value is taken over by GETSET; unlock deletes
  # only its own value.
  class RedisLockGem
    DIALECT = "redis-lock-gem"

    def initialize(redis, key, life:)
      @redis = redis
      @key = key
      @life = life
    end

    def value
      "#{Time.now.to_i + @life + 1}-#{Process.pid}-#{Thread.current.object_id}"
    end

    def try_lock
      @value = value
      return true if @redis.setnx(@key, @value)

      old = @redis.get(@key)
      return false if old.nil? || old.split("-").first.to_i >= Time.now.to_i

      @redis.getset(@key, @value) == old
    end

    def unlock
      @redis.del(@key) if @redis.get(@key) == @value
    end
  end

  # resque-lock-timeout: the expiry in whole seconds without the +1
  # ("true" when the timeout is 0: never expires); takeover by GETSET
  # when expired; the lock is cleared with DEL unless it timed out.
  class ResqueLockTimeout
    DIALECT = "resque-lock-timeout"

    def initialize(redis, key, lock_timeout:)
      @redis = redis
      @key = key
      @lock_timeout = lock_timeout
    end

    def try_lock
      now = Time.now.to_i
      @timeout = now + @lock_timeout
      return true if @redis.setnx(@key, @lock_timeout.zero? ? "true" : @timeout)

      old = @redis.get(@key)
      return false if old.nil? || old == "true" || old.to_i >= now

      @redis.getset(@key, @timeout).to_i < now
    end

    def unlock
      @redis.del(@key) if @lock_timeout.zero? || Time.now.to_i < @timeout
    end
  end

  ALL = [RedisObjectsLock, RedisMutex, RedisLockGem, ResqueLockTimeout].freeze

  # A peer of klass whose lease is seconds long.
  def self.make(klass, redis, key, seconds)
    arg = { RedisObjectsLock => :expiration, RedisMutex => :expire,
            RedisLockGem => :life, ResqueLockTimeout => :lock_timeout }[klass]
    klass.new(redis, key, arg => seconds)
  end
end
