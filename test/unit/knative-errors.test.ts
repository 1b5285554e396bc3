// The count of bench/knative-errors.ts, on log lines shaped as Knative's
// components write them (zap JSON) and on the proxy's request log.
import { logFindings, proxyFindings } from '../../bench/knative-errors.js';

describe('knative-errors', () => {
  it('counts proxy errors in queue-proxy and the activator, grouped by error with addresses taken out', () => {
    const line = (port: number): string => JSON.stringify({ severity: 'ERROR', message: 'x', msg: 'error reverse proxying request', error: `dial tcp 127.0.0.1:${port}: connect: connection refused` });
    const text = [line(8080), '{"msg":"Attached drain handler from user-container"}', line(8081), line(8080)].join('\n');
    expect(logFindings('serving', 'gw-00001-deployment-abc_queue-proxy', text)).toEqual([
      { run: 'serving', component: 'gw-00001-deployment-abc_queue-proxy', what: 'error reverse proxying request: dial tcp <addr>: connect: connection refused', count: 3 },
    ]);
    expect(logFindings('serving', 'activator', line(1))).toHaveLength(1);
    // A component not in the list: nothing counted.
    expect(logFindings('serving', 'autoscaler', line(1))).toEqual([]);
  });

  it("counts the filter's and the ingress's failed sends", () => {
    const failed = JSON.stringify({ level: 'error', msg: 'failed to send event', error: 'unexpected HTTP response, expected 2xx, got 503' });
    expect(logFindings('broker', 'broker-filter', `${failed}\n${failed}`)).toEqual([{ run: 'broker', component: 'broker-filter', what: 'failed to send event: unexpected HTTP response, expected 2xx, got 503', count: 2 }]);
    expect(logFindings('broker', 'broker-ingress', JSON.stringify({ msg: 'failed to dispatch event', error: 'boom' }))).toEqual([{ run: 'broker', component: 'broker-ingress', what: 'failed to dispatch event: boom', count: 1 }]);
  });

  it('counts 5xx answers on the wire by hop, and nothing below 500', () => {
    const rows = [
      { host: 'broker-filter.knative-eventing.svc.cluster.local', path: '/triggers/ns/t/u', status: 503, ceType: 'x.reconcile' },
      { host: 'broker-filter.knative-eventing.svc.cluster.local', path: '/triggers/ns/t/u', status: 503, ceType: 'x.reconcile' },
      { host: 'broker-ingress.knative-eventing.svc.cluster.local', path: '/ns/b', status: 202 },
      { host: 'fn.ns.svc.cluster.local', path: '/', status: 502 },
    ];
    expect(proxyFindings('r', rows.map((r) => JSON.stringify(r)).join('\n'))).toEqual([
      { run: 'r', component: 'wire (cluster DNS proxy)', what: 'filter answered 503 (x.reconcile)', count: 2 },
      { run: 'r', component: 'wire (cluster DNS proxy)', what: 'function address answered 502', count: 1 },
    ]);
  });
});
