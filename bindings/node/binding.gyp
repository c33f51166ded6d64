{
  "targets": [{
    "target_name": "tslock",
    "sources": ["src/addon.cc", "src/client.cc", "src/lock.cc"],
    "include_dirs": ["<!@(node scripts/flags.js include)"],
    "libraries": ["<!@(node scripts/flags.js libs)"],
    "dependencies": ["<!(node -p \"require('node-addon-api').targets\"):node_addon_api_except"],
    "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter"]
  }]
}
