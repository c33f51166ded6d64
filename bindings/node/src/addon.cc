/*
 * addon.cc - the module's entry: the error table and version the
 * JavaScript side reads, and the Error a failed call rejects with.
 */
#include "tslock_node.h"

Napi::Error make_error(Napi::Env env, int code, const std::string &detail)
{
    std::string msg = tslock_strerror(code);
    if (!detail.empty())
        msg += ": " + detail;
    Napi::Error e = Napi::Error::New(env, msg);
    e.Set("code", Napi::Number::New(env, code));
    e.Set("errname", Napi::String::New(env, tslock_errname(code)));
    e.Set("detail", Napi::String::New(env, detail));
    return e;
}

/* errors() - {TSLOCK_EBUSY: -1, ...} from the library's own table. */
static Napi::Value errors(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    Napi::Object out = Napi::Object::New(env);
    /* Codes run from 0 down; the table ends where errname stops knowing. */
    for (int code = 0; code > -1000; code--) {
        const char *name = tslock_errname(code);
        if (std::string(name) == "TSLOCK_UNKNOWN")
            break;
        Napi::Object entry = Napi::Object::New(env);
        entry.Set("code", code);
        entry.Set("message", tslock_strerror(code));
        out.Set(name, entry);
    }
    return out;
}

/* dialects() - [{name, format, library}] of the library's presets. */
static Napi::Value dialects(const Napi::CallbackInfo &info)
{
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    for (size_t i = 0;; i++) {
        const char *name = tslock_dialect_preset(i);
        if (name == nullptr)
            break;
        Napi::Object d = Napi::Object::New(env);
        const char *fmt = tslock_dialect_format(name);
        const char *lib = tslock_dialect_library(name);
        d.Set("name", name);
        d.Set("format", fmt ? fmt : "");
        d.Set("library", lib ? lib : "");
        out.Set(static_cast<uint32_t>(i), d);
    }
    return out;
}

static Napi::Object init(Napi::Env env, Napi::Object exports)
{
    exports.Set("version", Napi::String::New(env, tslock_version()));
    exports.Set("errors", Napi::Function::New(env, errors));
    exports.Set("dialects", Napi::Function::New(env, dialects));
    init_client(env, exports);
    init_lock(env, exports);
    return exports;
}

NODE_API_MODULE(tslock, init)
