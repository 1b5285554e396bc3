import { readFileSync } from 'node:fs';
import { loadYaml } from '@kubernetes/client-node';
import { SHIPPED_BLOB, SHIPPED_NODE_ARGS, SHIPPED_NODE_OPTIONS } from '../../tools/bundle/shipped.mjs';

// The image and the Knative Service run exactly what the tests and the bench
// start as "shipped" (tools/bundle/shipped.mts): the same node arguments, the
// same NODE_OPTIONS, and nothing in infra/ that overrides either.

describe('the shipped entry point', () => {
  const dockerfile = readFileSync('Dockerfile', 'utf8');

  it('is the Dockerfile CMD', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd).toBeDefined();
    expect(JSON.parse(cmd ?? '[]')).toEqual(['node', ...SHIPPED_NODE_ARGS]);
  });

  it('runs with the NODE_OPTIONS of the Dockerfile', () => {
    const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));
    expect(runtime).toContain(`ENV NODE_OPTIONS=${SHIPPED_NODE_OPTIONS}\n`);
  });

  it('is the blob the build stage makes and the runtime stage copies', () => {
    // The build stage runs the bundle script itself rather than through
    // `npm run`, which would put the node devDependency first on PATH: the
    // snapshot must be built by the image's own Node, the one that starts it.
    const script = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts['build:bundle'];
    expect(script).toBe('node tools/bundle/build.mts');
    expect(dockerfile).toContain(`RUN ${script}\n`);
    expect(dockerfile).toContain(`COPY --from=build /src/${SHIPPED_BLOB} ./${SHIPPED_BLOB}`);
  });

  it('is not overridden by the Knative Service', () => {
    const service = loadYaml<{ spec: { template: { spec: { containers: { command?: unknown; args?: unknown; env?: { name: string }[] }[] } } } }>(readFileSync('infra/knative/service.yaml', 'utf8'));
    const containers = service.spec.template.spec.containers;
    expect(containers).toHaveLength(1);
    for (const c of containers) {
      expect(c.command).toBeUndefined();
      expect(c.args).toBeUndefined();
      expect((c.env ?? []).map((e) => e.name)).not.toContain('NODE_OPTIONS');
    }
  });
});
