// Lists in pages: every list the controller makes asks for at most PAGE_SIZE
// objects at a time and follows the continue token. A page is a bounded
// answer for the API server to serialise and for the function to hold (and
// APF charges a LIST by its size); the resync plans a page of LB Deployments
// and lets it go before asking for the next (docs/design.md §11).

export const PAGE_SIZE = 500;

export interface PageRequest {
  /** Absent: every namespace. */
  namespace?: string;
  labelSelector?: string;
  limit: number;
  /** The previous page's token. */
  continue?: string;
}

export interface Page<T> {
  items: T[];
  /** Absent on the last page. */
  continue: string | undefined;
}

/**
 * Hands each page of a list to `onPage`, in order, and returns how many
 * requests that took. A continue token that expired (410) fails the list like
 * any other read: the caller's event is delivered again, and starts over.
 */
export async function forEachPage<T>(
  fetchPage: (limit: number, token: string | undefined) => Promise<Page<T>>,
  onPage: (items: T[]) => void | Promise<void>,
  limit = PAGE_SIZE,
): Promise<number> {
  let requests = 0;
  for await (const items of pagesOf(fetchPage, limit)) {
    requests++;
    await onPage(items);
  }
  return requests;
}

/**
 * The pages of a list, one request each, asked for only when the consumer
 * pulls the next one: two lists can be walked side by side (the resync merges
 * Gateways with their LB Deployments), and a consumer that has what it needs
 * stops asking. `fetchPage` counts the requests.
 */
export async function* pagesOf<T>(fetchPage: (limit: number, token: string | undefined) => Promise<Page<T>>, limit = PAGE_SIZE): AsyncGenerator<T[], void, undefined> {
  let token: string | undefined;
  do {
    const page = await fetchPage(limit, token);
    token = page.continue;
    yield page.items;
  } while (token !== undefined);
}
