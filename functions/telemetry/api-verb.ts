// The Kubernetes verb and resource of an API request, from its method and
// path, as the API server's own metrics and audit log name them
// (apiserver_request_total{verb,resource,subresource}): the attributes of the
// API request metric and span. Pure: the URL is all it reads.

export interface ApiVerb {
  verb: string;
  /** The plural resource, e.g. gateways; `subresource` e.g. status. */
  resource: string;
  subresource?: string;
  group: string;
}

const VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch' };

/**
 * /api/v1/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]] and
 * /apis/{group}/{version}/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]].
 * A GET without a name is a list (a watch is `?watch=true`, which the
 * function never makes); a path of another shape is `other`.
 */
export function apiVerb(method: string, url: string): ApiVerb {
  let path: string;
  let watch = false;
  try {
    const u = new URL(url);
    path = u.pathname;
    watch = u.searchParams.get('watch') === 'true';
  } catch {
    path = url.split('?')[0] ?? '';
  }
  const parts = path.split('/').filter((p) => p !== '');
  let group: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1] ?? '';
    rest = parts.slice(3);
  } else {
    return { verb: method.toLowerCase(), resource: 'other', group: '' };
  }
  // "namespaces/{ns}/{resource}..." is namespaced; "namespaces[/{name}]" alone is the Namespace resource.
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const [resource = 'other', name, subresource] = rest;
  const m = method.toUpperCase();
  const verb = m === 'GET' ? (name === undefined ? (watch ? 'watch' : 'list') : 'get') : m === 'DELETE' ? (name === undefined ? 'deletecollection' : 'delete') : (VERBS[m] ?? m.toLowerCase());
  return { verb, resource, group, ...(subresource !== undefined ? { subresource } : {}) };
}
