// Runs a throwaway control plane in the foreground until interrupted, for
// developers who want to poke at it with kubectl:
//   node dist/tools/controlplane/cli.js [--no-controller-manager]
// Prints one JSON line with the connection details on stdout when ready.
import { ControlPlane } from './control-plane.js';

const cp = await ControlPlane.start({ controllerManager: !process.argv.includes('--no-controller-manager') });
process.stdout.write(`${JSON.stringify({ ready: true, ...cp.info, pids: cp.pids() })}\n`);
process.stderr.write(`[controlplane] export KUBECONFIG=${cp.info.adminKubeconfig}   (Ctrl-C stops it)\n`);
// Keep the event loop alive; ControlPlane handles SIGINT/SIGTERM itself.
setInterval(() => undefined, 1 << 30);
