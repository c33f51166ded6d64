<?php
// SPDX-License-Identifier: BSD-3-Clause
//
// PackageTest.php - bindings/php/package.xml (pecl package) in step with
// the tree: it lists every file of the extension and its tests and no
// other, and carries the version the extension reports.

declare(strict_types=1);

namespace Tslock\Tests;

final class PackageTest extends TestCase
{
    public function testPackageXmlListsTheTree(): void
    {
        $dir = getenv('TSLOCK_SRCDIR') . '/bindings/php';
        preg_match_all('/<file role="\w+" name="([^"]+)"\/>/',
                       (string)file_get_contents("$dir/package.xml"), $m);
        $listed = $m[1];
        sort($listed);
        $tree = ['config.m4', 'tslock.ini'];
        foreach (['src', 'tests'] as $sub) {
            $it = new \RecursiveIteratorIterator(
                new \RecursiveDirectoryIterator("$dir/$sub",
                    \FilesystemIterator::SKIP_DOTS));
            foreach ($it as $f) {
                $tree[] = substr($f->getPathname(), strlen($dir) + 1);
            }
        }
        sort($tree);
        $this->assertSame($tree, $listed);
    }

    public function testPackageXmlCarriesTheVersion(): void
    {
        $xml = (string)file_get_contents(getenv('TSLOCK_SRCDIR')
                                         . '/bindings/php/package.xml');
        preg_match('/<release>([0-9.]+)<\/release>/', $xml, $m);
        $this->assertSame(phpversion('tslock'), $m[1]);
    }
}
