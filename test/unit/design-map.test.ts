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

// §2 walks one event through the modules, hop by hop. It stays true while
// every file it names exists and every module the handler and the front door
// call into is named in it.
function walk(): string {
  const text = readFileSync('docs/design.md', 'utf8');
  const start = text.indexOf('### One event, one hop per module');
  if (start < 0) throw new Error('docs/design.md §2 has no walk');
  return text.slice(start, text.indexOf('\n## ', start));
}

/** The repository files a module imports (relative imports only), as paths from the root. */
function importsOf(file: string): string[] {
  const dir = file.slice(0, file.lastIndexOf('/'));
  return [...readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)].map((m) => {
    const parts = `${dir}/${m[1] as string}.ts`.split('/');
    const out: string[] = [];
    for (const p of parts) {
      if (p === '..') out.pop();
      else if (p !== '.') out.push(p);
    }
    return out.join('/');
  });
}

describe('docs/design.md §2, the walk of one event', () => {
  const named = (): string[] => [...walk().matchAll(/`([a-z][\w./-]*\.ts)`/g)].map((m) => m[1] as string);

  it('names only files that exist', () => {
    expect(named().length).toBeGreaterThan(15);
    expect(named().filter((f) => !existsSync(f))).toEqual([]);
  });

  it('names every module the front door and the handler call into', () => {
    const mentioned = new Set(named());
    const called = [...new Set([...importsOf('functions/server.ts'), ...importsOf('functions/handle-event.ts'), ...importsOf('functions/reconcile-targets.ts')])]
      .filter((f) => f.startsWith('functions/') && !f.startsWith('functions/telemetry/') && !f.endsWith('-types.ts') && f !== 'functions/kube/classify-error.ts');
    expect(called.length).toBeGreaterThan(8);
    expect(called.filter((f) => !mentioned.has(f))).toEqual([]);
  });
});
