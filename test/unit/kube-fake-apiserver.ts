// A tiny in-memory apiserver for one namespaced collection (list with paging, watch, bookmarks), with
// switches to inject 410 Gone and other failures. Test helper for the kube-* unit tests.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export interface Obj { apiVersion?: string; kind?: string; metadata: { name: string; namespace: string; resourceVersion: string }; data?: Record<string, string> }

type Directive = 'gone-event' | 'gone-http' | 'http-500' | 'close';

export class FakeApiserver {
  rv = 100;
  readonly objects = new Map<string, Obj>();
  private readonly history: { rv: number; type: string; obj: Obj }[] = [];
  /** Watches from a resourceVersion below this get a 410 ERROR event ("too old resource version"). */
  compactedBelow = 0;
  /** One-shot behaviours for the next watch requests, in order. */
  readonly nextWatch: Directive[] = [];
  readonly requests: string[] = [];
  private readonly watchers = new Set<http.ServerResponse>();
  private server: http.Server | undefined;
  /** Any other path: handled here (e.g. leases, events); return false for 404. */
  extra?: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => boolean;

  constructor(readonly namespace = 'ns', readonly plural = 'configmaps') {}

  async start(): Promise<KubeConfig> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const { port } = this.server.address() as AddressInfo;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'secret-token' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'u' }],
      currentContext: 'fake',
    });
    return kc;
  }

  async stop(): Promise<void> {
    for (const w of this.watchers) w.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  /** Creates or updates; notify=false simulates a change the watcher missed. */
  put(name: string, data: Record<string, string>, notify = true): Obj {
    const type = this.objects.has(name) ? 'MODIFIED' : 'ADDED';
    const obj: Obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: this.namespace, resourceVersion: String(++this.rv) }, data };
    this.objects.set(name, obj);
    this.record(type, obj, notify);
    return obj;
  }

  remove(name: string, notify = true): void {
    const old = this.objects.get(name);
    if (!old) return;
    this.objects.delete(name);
    this.record('DELETED', { ...old, metadata: { ...old.metadata, resourceVersion: String(++this.rv) } }, notify);
  }

  bookmark(): void {
    this.send({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) } } });
  }

  closeWatches(): void {
    for (const w of this.watchers) w.end();
    this.watchers.clear();
  }

  private record(type: string, obj: Obj, notify: boolean): void {
    this.history.push({ rv: Number(obj.metadata.resourceVersion), type, obj });
    if (notify) this.send({ type, object: obj });
  }

  private send(ev: unknown): void {
    for (const w of this.watchers) w.write(JSON.stringify(ev) + '\n');
  }

  private handle(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    this.requests.push(`${req.method} ${req.url}`);
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.headers.authorization !== 'Bearer secret-token') return json(res, 401, status(401, 'Unauthorized', 'bad token'));
    if (url.pathname !== `/api/v1/namespaces/${this.namespace}/${this.plural}`) {
      if (this.extra?.(req, body, res)) return;
      return json(res, 404, status(404, 'NotFound', `${url.pathname} not found`));
    }
    if (url.searchParams.get('watch') === '1') return this.watch(url, res);
    const limit = Number(url.searchParams.get('limit') ?? '0');
    const start = Number(url.searchParams.get('continue') ?? '0');
    const all = [...this.objects.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    const page = limit > 0 ? all.slice(start, start + limit) : all;
    const more = limit > 0 && start + limit < all.length;
    // Like the real apiserver, list items carry no apiVersion/kind.
    const items = page.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    json(res, 200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv), continue: more ? String(start + limit) : undefined }, items });
  }

  private watch(url: URL, res: http.ServerResponse): void {
    const directive = this.nextWatch.shift();
    if (directive === 'gone-http') return json(res, 410, status(410, 'Expired', 'too old resource version'));
    if (directive === 'http-500') return json(res, 500, status(500, 'InternalError', 'boom'));
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (directive === 'close') return void res.end();
    const from = Number(url.searchParams.get('resourceVersion') ?? '0');
    if (directive === 'gone-event' || from < this.compactedBelow) {
      res.write(JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from}`) }) + '\n');
      return void res.end();
    }
    for (const h of this.history) if (h.rv > from) res.write(JSON.stringify({ type: h.type, object: h.obj }) + '\n');
    this.watchers.add(res);
    res.on('close', () => this.watchers.delete(res));
  }
}

export function status(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

export function json(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}
