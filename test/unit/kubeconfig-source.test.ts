import { delimiter } from 'node:path';
import { kubeconfigSource, type SourceProbe } from '../../functions/kube/kubeconfig.js';

// Where the kubeconfig comes from, in client-go's order: KUBECONFIG (every
// file it lists), else ~/.kube/config, else the Pod's ServiceAccount, else
// nowhere (which the start refuses instead of falling back to localhost).

const probe = (existing: string[]): SourceProbe => ({ exists: (p) => existing.includes(p), home: () => '/home/op' });
const TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

describe('kubeconfigSource', () => {
  test('KUBECONFIG wins, with every file it lists, whether or not they exist', () => {
    expect(kubeconfigSource({ KUBECONFIG: `/a${delimiter}${delimiter}/b` }, probe(['/home/op/.kube/config', TOKEN]))).toEqual({ kind: 'files', paths: ['/a', '/b'], via: 'KUBECONFIG' });
  });

  test('then ~/.kube/config, then the ServiceAccount, then nothing', () => {
    expect(kubeconfigSource({ KUBECONFIG: '' }, probe(['/home/op/.kube/config', TOKEN]))).toEqual({ kind: 'files', paths: ['/home/op/.kube/config'], via: 'home' });
    expect(kubeconfigSource({}, probe([TOKEN]))).toEqual({ kind: 'in-cluster' });
    expect(kubeconfigSource({}, probe([]))).toBeUndefined();
  });
});
