import { test } from 'node:test';
import assert from 'node:assert/strict';
import { symlinkTargetProblem } from '../../core/symlink-policy.js';

const EXT = 'EXTERNAL_SYMLINK';

test('symlinkTargetProblem: table', async (t) => {
  const cases: { link: string; target: string; want: null | typeof EXT; why: string }[] = [
    { link: 'a', target: 'b', want: null, why: 'sibling name' },
    { link: 'a', target: 'dir/file', want: null, why: 'names only, downward' },
    { link: 'a', target: './b', want: null, why: 'leading dot' },
    { link: 'a', target: '.', want: null, why: 'the link directory itself (the root)' },
    { link: 'a', target: 'b/', want: null, why: 'trailing slash' },
    { link: 'a', target: 'b//c', want: null, why: 'empty segment is ignored by the kernel' },
    { link: 'a', target: 'b/./c', want: null, why: 'inner dot' },
    { link: 'd/a', target: '..', want: null, why: 'up to the root' },
    { link: 'd/a', target: '../x', want: null, why: 'up to the root, then a name' },
    { link: 'd/e/a', target: '../../x/y', want: null, why: 'two up from depth two' },
    { link: 'd/e/a', target: './.././../x', want: null, why: 'dots between leading ..' },
    { link: 'a', target: '...', want: null, why: 'three dots is a name' },
    { link: 'a', target: '..a/b', want: null, why: '..a is a name' },
    { link: 'a', target: '', want: EXT, why: 'empty target' },
    { link: 'a', target: '/etc/passwd', want: EXT, why: 'absolute' },
    { link: 'a', target: '/', want: EXT, why: 'absolute root' },
    { link: 'a', target: 'b\0c', want: EXT, why: 'NUL' },
    { link: 'a', target: '..', want: EXT, why: 'parent of the root' },
    { link: 'a', target: '../a', want: EXT, why: 'leaves and comes back: still leaves' },
    { link: 'd/a', target: '../..', want: EXT, why: 'one level too many' },
    { link: 'd/e/a', target: '../../../x', want: EXT, why: 'three up from depth two' },
    { link: 'y', target: 'x/../..', want: EXT, why: 'name-then-.. (seed example)' },
    { link: 'd/y', target: 'x/../..', want: EXT, why: 'name-then-.. that normalizes to the root' },
    { link: 'd/y', target: 'x/..', want: EXT, why: 'name-then-.. that normalizes inside' },
    { link: 'a', target: 'b/..', want: EXT, why: 'name-then-.. back to the link directory' },
    { link: 'a', target: 'b/./..', want: EXT, why: 'dot does not reset the name' },
    { link: 'd/e/a', target: '../x/..', want: EXT, why: '.. after a name after a leading ..' },
    { link: 'a', target: '.../..', want: EXT, why: '.. after the name ...' },
    { link: 'a', target: 'b/c/../d', want: EXT, why: 'inner ..' },
    { link: 'a', target: 'b/..//', want: EXT, why: 'name-then-.. with slashes' },
  ];
  for (const c of cases) {
    await t.test(`${c.link} -> ${JSON.stringify(c.target)}: ${c.why}`, () => assert.equal(symlinkTargetProblem(c.link, c.target), c.want));
  }
});

test('symlinkTargetProblem: the link path must be clean', async (t) => {
  for (const bad of ['', '/a', 'a/', '../a', 'a/./b', 'a//b', 'a\0']) {
    await t.test(JSON.stringify(bad), () => assert.throws(() => symlinkTargetProblem(bad, 'x'), TypeError));
  }
});
