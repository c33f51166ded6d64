/*
 * tslock_node.h - what the files of the Node addon share: the pool of
 * connections a Client lends to its locks, and how a tslock code becomes
 * a rejected promise.  The addon calls only include/tslock.h; every lock
 * decision is libtslock's.
 */
#ifndef TSLOCK_NODE_H
#define TSLOCK_NODE_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <napi.h>
#include <tslock.h>

/*
 * A pool thread that has just answered a call stays a moment for the
 * client's next one (release, mostly, sent as soon as a critical section
 * ends, or the next acquire): a call that finds it there skips the
 * libuv pool's queue and the wake of a sleeping thread.  One thread at a
 * time stays; a call that comes later queues as any other.
 */
class Handoff
{
  public:
    /* Where one staying thread is handed its next call. */
    struct Slot {
        std::atomic<bool> posted{false};
        void *call = nullptr; /* guarded by Handoff's mutex */
        std::condition_variable cv;
    };
    /* Pool thread: stay at slot (false: another thread stays). */
    bool offer(Slot *slot);
    /* Pool thread, after offer(slot): the next call, or nullptr when none
     * came within spin (yielding) and then sleep. */
    void *next(Slot *slot, std::chrono::microseconds spin,
               std::chrono::microseconds sleep);
    /* Main thread: hand call to the thread that stays, if one does. */
    bool post(void *call);

  private:
    std::mutex mu_;
    Slot *staying_ = nullptr; /* guarded by mu_ */
};

/*
 * Connections to one server, as one URL names it.  A tslock_client is
 * used by one thread at a time, so every lock borrows a connection of
 * its own for as long as it holds (and its watchdog another); a released
 * lock gives it back for the next.  Borrowing connects on a pool thread.
 */
class Pool
{
  public:
    Pool() = default;
    ~Pool();
    Pool(const Pool &) = delete;
    Pool &operator=(const Pool &) = delete;

    /* Parse url (on the main thread); err gets the parser's line. */
    int parse(const std::string &url, std::string *err);
    /* Add one TLS setting (tslock_tls_set's names). */
    int set_tls(const char *name, const char *value, std::string *err);
    /* Lend a connected client (connects when none is idle). */
    int borrow(tslock_client **out, std::string *err);
    /* Take a client back: kept for the next borrower unless broken. */
    void give_back(tslock_client *client);
    /* Free the idle connections; borrowed ones are freed when returned. */
    void close();

    Handoff handoff;

  private:
    std::mutex mu_;
    struct tslock_url url_ = {};
    bool parsed_ = false;
    bool closed_ = false;
    std::vector<tslock_client *> idle_;
};

/* A failure to hand to JavaScript: the library's code and its detail. */
struct Failure {
    int code = TSLOCK_OK;
    std::string detail;
};

/* The Error a promise is rejected with (lib/errors.js makes the class). */
Napi::Error make_error(Napi::Env env, int code, const std::string &detail);

Napi::Object init_client(Napi::Env env, Napi::Object exports);
Napi::Object init_lock(Napi::Env env, Napi::Object exports);

/* The NativeClient's pool, for NativeLock's constructor. */
std::shared_ptr<Pool> client_pool(const Napi::Value &value);

/* What the module keeps per environment: the NativeClient constructor,
 * and the one channel every pool thread hands its replies back through
 * (a thread-safe function without a JavaScript function, ref'd while a
 * call is unsettled). */
struct AddonData {
    Napi::FunctionReference client_ctor;
    napi_threadsafe_function replies = nullptr;
    long outstanding = 0; /* calls not settled yet (main thread only) */
};

#endif
