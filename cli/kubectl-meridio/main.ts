// A stand-in entry for `kubectl meridio` (issue 42), only so that the
// distribution (tools/plugin: the single executable, the krew manifest, the
// release) can be built and run before the plugin's verbs land: `version`, and
// `status -A` as a NAMESPACE NAME table of every Gateway. The `plugin` branch
// owns this file and replaces it whole.
import { kubeApi } from '../../functions/kube/kube-api.js';
import { loadKubeConfig } from '../../functions/kube/kubeconfig.js';
import { VERSION } from '../../functions/version.js';

const USAGE = 'usage: kubectl meridio version | kubectl meridio status -A';

async function main(argv: readonly string[]): Promise<{ text: string; exitCode: number }> {
  const [verb, ...rest] = argv;
  if (verb === 'version' && rest.length === 0) return { text: `kubectl-meridio ${VERSION}\n`, exitCode: 0 };
  if (verb === 'status' && rest.length === 1 && (rest[0] === '-A' || rest[0] === '--all-namespaces')) {
    const gateways = await kubeApi(loadKubeConfig()).listGateways();
    const rows = [['NAMESPACE', 'NAME'], ...gateways.map((g) => [g.metadata.namespace ?? '', g.metadata.name])];
    const width = Math.max(...rows.map(([ns]) => (ns ?? '').length));
    return { text: rows.map(([ns, name]) => `${(ns ?? '').padEnd(width)}   ${name ?? ''}\n`).join(''), exitCode: 0 };
  }
  return { text: `${USAGE}\n`, exitCode: 2 };
}

main(process.argv.slice(2)).then(
  ({ text, exitCode }) => {
    (exitCode === 0 ? process.stdout : process.stderr).write(text);
    process.exitCode = exitCode;
  },
  (err: unknown) => {
    process.stderr.write(`kubectl-meridio: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
