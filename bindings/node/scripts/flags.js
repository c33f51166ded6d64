// flags.js - where binding.gyp finds libtslock: TSLOCK_INCLUDE_DIR and
// TSLOCK_LIB_DIR (the test builds against the tree just built), else
// pkg-config's tslock.pc (an installed libtslock), else /usr/local.
'use strict';
const { execFileSync } = require('child_process');
const what = process.argv[2];
function pkg(flag) {
  try {
    return execFileSync('pkg-config', [flag, 'tslock'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}
if (what === 'include') {
  const dir = process.env.TSLOCK_INCLUDE_DIR;
  const out = dir || (pkg('--cflags-only-I') || '-I/usr/local/include').replace(/-I/g, '');
  console.log(out.trim() || '/usr/include');
} else if (what === 'libs') {
  const dir = process.env.TSLOCK_LIB_DIR;
  console.log(dir ? `-L${dir} -ltslock` : pkg('--libs') || '-L/usr/local/lib -ltslock');
}
