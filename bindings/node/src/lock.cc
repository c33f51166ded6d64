/*
 * lock.cc - NativeLock: one named lock, its borrowed connection, and its
 * watchdog.  Every call that talks to Redis runs on the libuv pool and
 * settles a promise through one thread-safe function; the pool thread
 * that answered stays for the client's next call a moment (Handoff), so
 * a release right after the critical section skips the pool's queue.
 * cancel() is tslock_lock_cancel() from the main thread; the watchdog's
 * loss reaches JavaScript by a thread-safe function.
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <system_error>
#include <thread>

#include "tslock_node.h"

/* The options acquire() applies, read once from JavaScript. */
struct LockOptions {
    int64_t ttl = 0; /* 0: the library's default */
    int scheme = -1, unit = -1, rw = -1;
    int64_t permits = 0;
    bool fair = false, fencing = false;
    std::string dialect;
};

struct Reply;

class NativeLock : public Napi::ObjectWrap<NativeLock>
{
  public:
    explicit NativeLock(const Napi::CallbackInfo &info);
    ~NativeLock() override;

    std::shared_ptr<Pool> pool;
    std::string key;
    LockOptions opt;
    /* Guarded by mu: the lock object, so cancel() from the main thread
     * never races its creation or freeing on a pool thread. */
    std::mutex mu;
    tslock_lock *lock = nullptr;
    std::atomic<bool> cancel_wanted{false};
    tslock_client *conn = nullptr;
    tslock_watchdog *dog = nullptr;
    tslock_client *dog_conn = nullptr;
    int64_t dog_interval = 0; /* watch()'s, kept across extend() */
    Napi::ThreadSafeFunction on_loss;
    bool has_on_loss = false;
    /* Cleared by the thread-safe function's finalizer: at exit Node may
     * destroy it before this object, and it must not be released twice. */
    std::shared_ptr<std::atomic<bool>> loss_alive;

    int setup(Failure *f);
    void drop();
    int start_dog(int64_t interval_ms, Failure *f);
    int stop_dog();

    /* The methods JavaScript calls. */
    Napi::Value acquire(const Napi::CallbackInfo &info);
    Napi::Value release(const Napi::CallbackInfo &info);
    Napi::Value extend(const Napi::CallbackInfo &info);
    Napi::Value watch(const Napi::CallbackInfo &info);
    Napi::Value holders(const Napi::CallbackInfo &info);
    Napi::Value cancel(const Napi::CallbackInfo &info);
};

static int64_t num(Napi::Object o, const char *name, int64_t dflt)
{
    Napi::Value v = o.Get(name);
    return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : dflt;
}

/* new NativeLock(nativeClient, name, {ttl, scheme, unit, ...}) */
NativeLock::NativeLock(const Napi::CallbackInfo &info)
    : Napi::ObjectWrap<NativeLock>(info)
{
    Napi::Env env = info.Env();
    pool = client_pool(info[0]);
    if (pool == nullptr || !info[1].IsString() || !info[2].IsObject()) {
        make_error(env, TSLOCK_EINVAL, "NativeLock(client, name, options)")
            .ThrowAsJavaScriptException();
        return;
    }
    key = info[1].As<Napi::String>();
    Napi::Object o = info[2].As<Napi::Object>();
    opt.ttl = num(o, "ttl", 0);
    opt.scheme = (int)num(o, "scheme", -1);
    opt.unit = (int)num(o, "unit", -1);
    opt.rw = (int)num(o, "rw", -1);
    opt.permits = num(o, "permits", 0);
    opt.fair = o.Get("fair").ToBoolean();
    opt.fencing = o.Get("fencing").ToBoolean();
    if (o.Get("dialect").IsString())
        opt.dialect = o.Get("dialect").As<Napi::String>();
}

NativeLock::~NativeLock()
{
    /* A lock collected while held is not released: its lease runs out. */
    stop_dog();
    drop();
    if (has_on_loss && loss_alive->load())
        on_loss.Release();
}

/* Borrow a connection and make the lock object with its options. */
int NativeLock::setup(Failure *f)
{
    if (conn == nullptr
        && (f->code = pool->borrow(&conn, &f->detail)) != TSLOCK_OK)
        return f->code;
    tslock_lock *l = nullptr;
    int rc = tslock_lock_new(&l, conn, key.c_str());
    if (rc == TSLOCK_OK && opt.ttl > 0)
        rc = tslock_lock_set_ttl(l, opt.ttl);
    if (rc == TSLOCK_OK && opt.scheme >= 0)
        rc = tslock_lock_set_scheme(l, (tslock_scheme)opt.scheme);
    if (rc == TSLOCK_OK && opt.unit >= 0)
        rc = tslock_lock_set_unit(l, (tslock_unit)opt.unit);
    if (rc == TSLOCK_OK && !opt.dialect.empty())
        rc = tslock_lock_set_dialect(l, opt.dialect.c_str());
    if (rc == TSLOCK_OK && opt.rw >= 0)
        rc = tslock_lock_set_rw(l, (tslock_rw)opt.rw);
    if (rc == TSLOCK_OK && opt.permits > 0)
        rc = tslock_lock_set_permits(l, opt.permits);
    if (rc == TSLOCK_OK && opt.fair)
        rc = tslock_lock_set_fair(l, 1);
    if (rc == TSLOCK_OK && opt.fencing)
        rc = tslock_lock_set_fencing(l, 1);
    if (rc != TSLOCK_OK) {
        f->code = rc;
        f->detail = tslock_client_errstr(conn);
        tslock_lock_free(l);
        return rc;
    }
    std::lock_guard<std::mutex> hold(mu);
    lock = l;
    /* An abort that came before the lock existed cancels its wait now. */
    if (cancel_wanted.load())
        tslock_lock_cancel(lock);
    return TSLOCK_OK;
}

/* Free the lock object (not releasing it) and give the connection back. */
void NativeLock::drop()
{
    {
        std::lock_guard<std::mutex> hold(mu);
        tslock_lock_free(lock);
        lock = nullptr;
    }
    pool->give_back(conn);
    conn = nullptr;
}

struct LossPayload {
    int code;
    std::string detail;
};

static void on_dog_failure(int code, const char *detail, void *userdata)
{
    NativeLock *self = static_cast<NativeLock *>(userdata);
    if (!self->has_on_loss || !self->loss_alive->load())
        return;
    auto *p = new LossPayload{code, detail ? detail : ""};
    napi_status st = self->on_loss.NonBlockingCall(
        p, [](Napi::Env env, Napi::Function cb, LossPayload *p) {
            if (env != nullptr && cb != nullptr)
                cb.Call({make_error(env, p->code, p->detail).Value()});
            delete p;
        });
    if (st != napi_ok)
        delete p;
}

int NativeLock::start_dog(int64_t interval_ms, Failure *f)
{
    if ((f->code = pool->borrow(&dog_conn, &f->detail)) != TSLOCK_OK)
        return f->code;
    dog_interval = interval_ms;
    f->code = tslock_watchdog_start(&dog, lock, dog_conn, interval_ms,
                                    on_dog_failure, this);
    if (f->code != TSLOCK_OK) {
        f->detail = "watchdog";
        pool->give_back(dog_conn);
        dog_conn = nullptr;
    }
    return f->code;
}

/* Stop renewing; the hold goes back to the lock (unheld if it was lost). */
int NativeLock::stop_dog()
{
    if (dog == nullptr)
        return TSLOCK_OK;
    int rc = tslock_watchdog_stop(dog);
    dog = nullptr;
    pool->give_back(dog_conn);
    dog_conn = nullptr;
    return rc;
}

/*
 * One promise-returning call: work() runs on a pool thread, done() on the
 * main thread builds the value the promise resolves with.  A Reply holds
 * what settling it needs, and a reference that keeps the lock object
 * alive until it is settled; every Reply comes back through the one
 * channel (AddonData::replies) and is settled and freed there.
 */
using Work = std::function<void(NativeLock *, Failure *)>;
using Done = std::function<Napi::Value(Napi::Env, NativeLock *)>;

struct Reply {
    NativeLock *self;
    Napi::ObjectReference holder;
    napi_deferred deferred;
    Work work;
    Done done;
    Failure f;
};

/* The channel keeps the loop alive while a call is unsettled, whatever
 * order the loop sees a work item's end and its reply in. */
static void outstanding(napi_env env, int delta)
{
    AddonData *data = Napi::Env(env).GetInstanceData<AddonData>();
    data->outstanding += delta;
    if (delta > 0 && data->outstanding == 1)
        napi_ref_threadsafe_function(env, data->replies);
    else if (delta < 0 && data->outstanding == 0)
        napi_unref_threadsafe_function(env, data->replies);
}

static void settle(napi_env raw, napi_value, void *, void *data)
{
    Reply *r = static_cast<Reply *>(data);
    if (raw == nullptr) {
        /* The environment is gone (exit): nothing left to settle. */
        r->holder.SuppressDestruct();
        delete r;
        return;
    }
    Napi::Env env(raw);
    Napi::HandleScope scope(env);
    outstanding(env, -1);
    if (r->f.code != TSLOCK_OK)
        napi_reject_deferred(env, r->deferred,
                             make_error(env, r->f.code, r->f.detail).Value());
    else
        napi_resolve_deferred(env, r->deferred,
                              r->done ? r->done(env, r->self)
                                      : env.Undefined());
    delete r;
}

/* Hand a finished Reply back to the main thread. */
static void send(napi_threadsafe_function replies, Reply *r)
{
    if (napi_call_threadsafe_function(replies, r, napi_tsfn_nonblocking)
        != napi_ok) {
        r->holder.SuppressDestruct(); /* not ours to delete off-thread */
        delete r;
    }
}

/* How long a pool thread that answered stays for the client's next
 * call (Handoff): spinning (yielding), then asleep. */
static const auto STAY_SPIN = std::chrono::microseconds(50);
static const auto STAY_SLEEP = std::chrono::microseconds(1000);

/* A pool thread, or a waiting call's own: run r, answer, and stay for
 * the client's next call a moment.  Each Reply keeps its lock object
 * alive until settled; the thread keeps the client's pool. */
static void serve(Reply *r, napi_threadsafe_function replies,
                  std::shared_ptr<Pool> pool)
{
    Handoff::Slot slot;
    for (;;) {
        r->work(r->self, &r->f);
        /* Before the answer: the next call may follow it at once. */
        bool stay = pool->handoff.offer(&slot);
        send(replies, r);
        if (!stay)
            return;
        r = static_cast<Reply *>(
            pool->handoff.next(&slot, STAY_SPIN, STAY_SLEEP));
        if (r == nullptr)
            return;
    }
}

class LockWorker : public Napi::AsyncWorker
{
  public:
    LockWorker(Napi::Env env, Reply *r, napi_threadsafe_function replies)
        : Napi::AsyncWorker(env, "tslock"), r_(r), replies_(replies),
          pool_(r->self->pool)
    {
    }
    void Execute() override
    {
        serve(r_, replies_, pool_);
    }
    void OnOK() override {}

  private:
    Reply *r_;
    napi_threadsafe_function replies_;
    std::shared_ptr<Pool> pool_;
};

/*
 * Start a call.  One that may wait (an acquire with a wait) runs on a
 * thread of its own: on the libuv pool, a few waits would hold every
 * pool thread, and the release they wait for would queue behind them
 * (as would fs, dns and crypto work).  Any other call goes to the thread
 * staying for the client's next call, else onto the libuv pool.
 */
static Napi::Value queue(NativeLock *self, Napi::Object holder, Work work,
                         Done done, bool waits = false)
{
    Napi::Env env = holder.Env();
    napi_value promise;
    Reply *r = new Reply{self,
                         Napi::Persistent(holder),
                         nullptr,
                         std::move(work),
                         std::move(done),
                         Failure()};
    napi_create_promise(env, &r->deferred, &promise);
    outstanding(env, 1);
    napi_threadsafe_function replies =
        env.GetInstanceData<AddonData>()->replies;
    if (waits) {
        try {
            std::thread(serve, r, replies, self->pool).detach();
            return Napi::Value(env, promise);
        } catch (const std::system_error &) {
            /* No thread to be had: wait on the pool after all. */
        }
    } else if (self->pool->handoff.post(r)) {
        return Napi::Value(env, promise);
    }
    (new LockWorker(env, r, replies))->Queue();
    return Napi::Value(env, promise);
}

/* The hold just taken, as acquire() resolves it. */
static Napi::Value hold_info(Napi::Env env, NativeLock *self)
{
    Napi::Object o = Napi::Object::New(env);
    const char *v = tslock_lock_value(self->lock);
    o.Set("value", v ? v : "");
    o.Set("fence", (double)tslock_lock_fence(self->lock));
    o.Set("expires", (double)tslock_lock_expires_ms(self->lock));
    o.Set("scheme", (int)tslock_lock_scheme_used(self->lock));
    return o;
}

/* acquire(waitMs): -1 waits until taken or canceled. */
Napi::Value NativeLock::acquire(const Napi::CallbackInfo &info)
{
    int64_t wait = info[0].As<Napi::Number>().Int64Value();
    if (wait < 0)
        wait = TSLOCK_WAIT_FOREVER;
    cancel_wanted = false;
    return queue(
        this, info.This().As<Napi::Object>(),
        [wait](NativeLock *s, Failure *f) {
            if (s->lock != nullptr) {
                f->code = TSLOCK_ESTATE;
                f->detail = "this lock object already holds";
                return;
            }
            if (s->setup(f) != TSLOCK_OK)
                return;
            /* Aborted before its thread began: not even the first try
             * (a cancel only ends a wait, and the key may be free by
             * now).  An abort from here on cancels through setup's lock. */
            if (s->cancel_wanted.load()) {
                f->code = TSLOCK_ECANCELED;
                f->detail = "aborted before the wait began";
                s->drop();
                return;
            }
            f->code = tslock_acquire(s->lock, wait);
            if (f->code != TSLOCK_OK) {
                /* Nothing held: the connection goes back at once. */
                f->detail = tslock_client_errstr(s->conn);
                s->drop();
            }
        },
        hold_info, wait != 0);
}

Napi::Value NativeLock::release(const Napi::CallbackInfo &info)
{
    return queue(
        this, info.This().As<Napi::Object>(),
        [](NativeLock *s, Failure *f) {
            if (s->lock == nullptr) {
                f->code = TSLOCK_ESTATE;
                f->detail = "not held";
                return;
            }
            s->stop_dog();
            f->code = tslock_release(s->lock);
            if (f->code != TSLOCK_OK)
                f->detail = tslock_client_errstr(s->conn);
            if (f->code == TSLOCK_OK || f->code == TSLOCK_ELOST
                || f->code == TSLOCK_EWRONGTYPE
                || !tslock_lock_is_held(s->lock))
                s->drop();
        },
        nullptr);
}

/* extend(ttlMs): a watched lock pauses its watchdog around the call. */
Napi::Value NativeLock::extend(const Napi::CallbackInfo &info)
{
    int64_t ttl = info[0].As<Napi::Number>().Int64Value();
    return queue(
        this, info.This().As<Napi::Object>(),
        [ttl](NativeLock *s, Failure *f) {
            if (s->lock == nullptr) {
                f->code = TSLOCK_ESTATE;
                f->detail = "not held";
                return;
            }
            bool watched = s->dog != nullptr;
            s->stop_dog();
            f->code = tslock_extend(s->lock, ttl);
            if (f->code != TSLOCK_OK)
                f->detail = tslock_client_errstr(s->conn);
            if (!tslock_lock_is_held(s->lock)) {
                s->drop();
                return;
            }
            if (watched && f->code == TSLOCK_OK)
                s->start_dog(s->dog_interval, f);
        },
        hold_info);
}

/* watch(intervalMs, onLoss): renew from a thread of libtslock's until
 * released; onLoss(err) is called once if renewing fails. */
Napi::Value NativeLock::watch(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    int64_t interval = info[0].As<Napi::Number>().Int64Value();
    if (!has_on_loss && info[1].IsFunction()) {
        loss_alive = std::make_shared<std::atomic<bool>>(true);
        auto *alive = new std::shared_ptr<std::atomic<bool>>(loss_alive);
        on_loss = Napi::ThreadSafeFunction::New(
            env, info[1].As<Napi::Function>(), "tslock-loss", 0, 1, alive,
            [](Napi::Env, std::shared_ptr<std::atomic<bool>> *alive) {
                **alive = false;
                delete alive;
            });
        /* A renewing watchdog does not keep the process alive. */
        on_loss.Unref(env);
        has_on_loss = true;
    }
    return queue(
        this, info.This().As<Napi::Object>(),
        [interval](NativeLock *s, Failure *f) {
            if (s->lock == nullptr) {
                f->code = TSLOCK_ESTATE;
                f->detail = "not held";
            } else if (s->dog == nullptr) {
                s->start_dog(interval, f);
            }
        },
        nullptr);
}

/* holders(): live holders of a shared lock or semaphore. */
Napi::Value NativeLock::holders(const Napi::CallbackInfo &info)
{
    auto count = std::make_shared<int64_t>(0);
    return queue(
        this, info.This().As<Napi::Object>(),
        [count](NativeLock *s, Failure *f) {
            bool own = s->lock == nullptr;
            if (own && s->setup(f) != TSLOCK_OK)
                return;
            f->code = tslock_lock_holders(s->lock, count.get());
            if (f->code != TSLOCK_OK)
                f->detail = tslock_client_errstr(s->conn);
            if (own)
                s->drop();
        },
        [count](Napi::Env env, NativeLock *) {
            return Napi::Number::New(env, (double)*count);
        });
}

/* cancel(): end a pending wait now (from the main thread). */
Napi::Value NativeLock::cancel(const Napi::CallbackInfo &info)
{
    cancel_wanted = true;
    std::lock_guard<std::mutex> hold(mu);
    if (lock != nullptr)
        tslock_lock_cancel(lock);
    return info.Env().Undefined();
}

Napi::Object init_lock(Napi::Env env, Napi::Object exports)
{
    Napi::Function f = NativeLock::DefineClass(
        env, "NativeLock",
        {NativeLock::InstanceMethod("acquire", &NativeLock::acquire),
         NativeLock::InstanceMethod("release", &NativeLock::release),
         NativeLock::InstanceMethod("extend", &NativeLock::extend),
         NativeLock::InstanceMethod("watch", &NativeLock::watch),
         NativeLock::InstanceMethod("holders", &NativeLock::holders),
         NativeLock::InstanceMethod("cancel", &NativeLock::cancel)});
    exports.Set("NativeLock", f);
    AddonData *data = env.GetInstanceData<AddonData>();
    napi_create_threadsafe_function(
        env, nullptr, nullptr, Napi::String::New(env, "tslock-reply"), 0, 1,
        nullptr, nullptr, nullptr, settle, &data->replies);
    napi_unref_threadsafe_function(env, data->replies);
    return exports;
}
