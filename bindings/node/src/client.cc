/*
 * client.cc - NativeClient: a parsed URL (the library's one parser) and
 * the pool of connections its locks borrow.
 */
#include <thread>

#include "tslock_node.h"

Pool::~Pool()
{
    close();
    tslock_url_free(&url_);
}

int Pool::parse(const std::string &url, std::string *err)
{
    char buf[256] = "";
    int rc = tslock_url_parse(url.c_str(), 0, &url_, buf, sizeof buf);
    if (rc != TSLOCK_OK)
        *err = buf;
    else
        parsed_ = true;
    return rc;
}

int Pool::set_tls(const char *name, const char *value, std::string *err)
{
    char buf[256] = "";
    int rc;
    if (url_.tls == nullptr && (rc = tslock_tls_new(&url_.tls)) != TSLOCK_OK) {
        *err = "TLS settings";
        return rc;
    }
    rc = tslock_tls_set(url_.tls, name, value, buf, sizeof buf);
    if (rc != TSLOCK_OK)
        *err = buf;
    return rc;
}

int Pool::borrow(tslock_client **out, std::string *err)
{
    {
        std::lock_guard<std::mutex> hold(mu_);
        if (closed_) {
            *err = "the client was closed";
            return TSLOCK_ESTATE;
        }
        if (!idle_.empty()) {
            *out = idle_.back();
            idle_.pop_back();
            return TSLOCK_OK;
        }
    }
    /* Connecting happens outside the lock: the URL is only read. */
    tslock_client *c = nullptr;
    int rc = tslock_client_new(&c);
    if (rc != TSLOCK_OK)
        return rc;
    rc = tslock_client_connect_parsed_url(c, &url_);
    if (rc != TSLOCK_OK) {
        *err = tslock_client_errstr(c);
        tslock_client_free(c);
        return rc;
    }
    *out = c;
    return TSLOCK_OK;
}

void Pool::give_back(tslock_client *client)
{
    if (client == nullptr)
        return;
    {
        std::lock_guard<std::mutex> hold(mu_);
        if (!closed_ && !tslock_client_is_broken(client) && idle_.size() < 64) {
            idle_.push_back(client);
            return;
        }
    }
    tslock_client_free(client);
}

void Pool::close()
{
    std::vector<tslock_client *> gone;
    {
        std::lock_guard<std::mutex> hold(mu_);
        closed_ = true;
        gone.swap(idle_);
    }
    for (tslock_client *c : gone)
        tslock_client_free(c);
}

bool Handoff::offer(Slot *slot)
{
    std::lock_guard<std::mutex> hold(mu_);
    if (staying_ != nullptr)
        return false;
    slot->posted.store(false, std::memory_order_relaxed);
    slot->call = nullptr;
    staying_ = slot;
    return true;
}

void *Handoff::next(Slot *slot, std::chrono::microseconds spin,
                    std::chrono::microseconds sleep)
{
    auto until = std::chrono::steady_clock::now() + spin;
    while (!slot->posted.load(std::memory_order_acquire)
           && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
    std::unique_lock<std::mutex> hold(mu_);
    slot->cv.wait_for(hold, sleep, [slot] {
        return slot->posted.load(std::memory_order_acquire);
    });
    if (!slot->posted.load(std::memory_order_acquire)) {
        /* Nothing came: later calls queue on the pool. */
        if (staying_ == slot)
            staying_ = nullptr;
        return nullptr;
    }
    return slot->call;
}

bool Handoff::post(void *call)
{
    std::lock_guard<std::mutex> hold(mu_);
    Slot *slot = staying_;
    if (slot == nullptr)
        return false;
    staying_ = nullptr;
    slot->call = call;
    slot->posted.store(true, std::memory_order_release);
    slot->cv.notify_one();
    return true;
}

class NativeClient : public Napi::ObjectWrap<NativeClient>
{
  public:
    std::shared_ptr<Pool> pool = std::make_shared<Pool>();

    /* new NativeClient(url, {tslock_tls_set name: value}) */
    explicit NativeClient(const Napi::CallbackInfo &info)
        : Napi::ObjectWrap<NativeClient>(info)
    {
        Napi::Env env = info.Env();
        std::string err;
        if (info.Length() < 1 || !info[0].IsString()) {
            make_error(env, TSLOCK_EINVAL, "url must be a string")
                .ThrowAsJavaScriptException();
            return;
        }
        int rc = pool->parse(info[0].As<Napi::String>(), &err);
        if (rc == TSLOCK_OK && info.Length() > 1 && info[1].IsObject()) {
            Napi::Object tls = info[1].As<Napi::Object>();
            Napi::Array names = tls.GetPropertyNames();
            for (uint32_t i = 0; rc == TSLOCK_OK && i < names.Length(); i++) {
                std::string name = names.Get(i).ToString();
                std::string value = tls.Get(name).ToString();
                rc = pool->set_tls(name.c_str(), value.c_str(), &err);
            }
        }
        if (rc != TSLOCK_OK)
            make_error(env, rc, err).ThrowAsJavaScriptException();
    }

    Napi::Value close(const Napi::CallbackInfo &info)
    {
        pool->close();
        return info.Env().Undefined();
    }
};

/* The constructor is kept per environment (a static reference would be
 * deleted after the environment is gone, at exit): AddonData. */
std::shared_ptr<Pool> client_pool(const Napi::Value &value)
{
    if (!value.IsObject()
        || !value.As<Napi::Object>().InstanceOf(
            value.Env().GetInstanceData<AddonData>()->client_ctor.Value()))
        return nullptr;
    return NativeClient::Unwrap(value.As<Napi::Object>())->pool;
}

Napi::Object init_client(Napi::Env env, Napi::Object exports)
{
    Napi::Function f = NativeClient::DefineClass(
        env, "NativeClient",
        {NativeClient::InstanceMethod("close", &NativeClient::close)});
    AddonData *data = new AddonData();
    data->client_ctor = Napi::Persistent(f);
    env.SetInstanceData(data);
    exports.Set("NativeClient", f);
    return exports;
}
