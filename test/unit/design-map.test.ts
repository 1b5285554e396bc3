import { existsSync, readdirSync, readFileSync } from 'node:fs';

// docs/design.md §10 maps each rule to the file that holds it. The map is
// only worth reading while it is true: every file it names exists, and every
// file of the planner is named in it.

function section10(): string {
  const text = readFileSync('docs/design.md', 'utf8');
  const start = text.indexOf('## 10. Where each rule lives');
  if (start < 0) throw new Error('docs/design.md has no §10');
  const next = text.indexOf('\n## ', start + 1);
  return text.slice(start, next < 0 ? undefined : next);
}

const named = (): string[] => [...section10().matchAll(/`([a-z][\w./-]*\.ts)`/g)].map((m) => m[1] as string);

describe('docs/design.md §10', () => {
  it('names only files that exist', () => {
    const files = named();
    expect(files.length).toBeGreaterThan(40);
    expect(files.filter((f) => !existsSync(f))).toEqual([]);
  });

  it('names every file of the planner', () => {
    const plan = readdirSync('functions/reconcile/plan').filter((f) => f.endsWith('.ts')).map((f) => `functions/reconcile/plan/${f}`);
    const mentioned = new Set(named());
    expect(plan.filter((f) => !mentioned.has(f))).toEqual([]);
  });

  it('names every module of api/ and events/', () => {
    const mentioned = new Set(named());
    const files = ['api', 'events'].flatMap((dir) => readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => `${dir}/${f}`));
    expect(files.filter((f) => !mentioned.has(f))).toEqual([]);
  });
});
