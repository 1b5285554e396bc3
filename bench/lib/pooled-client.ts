// The bench's bare GET uses exactly the function's client (one connection pool).
export { customObjectsApi as pooledCustomObjectsApi } from '../../functions/kube/pooled-client.js';
