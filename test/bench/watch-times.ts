// Arrival times of API objects for the stack benchmarks: the project's own informer (list + watch) on one
// resource in one namespace, and a way to follow one object's versions as they arrive, each with the
// performance.now() at which the watch delivered it.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { Informer } from '../../kube/informer.js';
import { objectKey, type ResourceRef } from '../../kube/resource-ref.js';

interface Follower<T> {
  key: string;
  on: (obj: T, at: number) => boolean;
  done: () => void;
  fail: (e: Error) => void;
}

export class WatchTimes<T extends KubernetesObject> {
  private readonly informer: Informer<T>;
  private readonly followers = new Set<Follower<T>>();

  constructor(kubeConfig: KubeConfig, resource: ResourceRef, namespace: string) {
    this.informer = new Informer<T>({ kubeConfig, resource, namespace, backoff: { initialMs: 50, maxMs: 1000 } });
    const seen = (obj: T): void => this.seen(obj, performance.now());
    this.informer.onAdd(seen);
    this.informer.onUpdate(seen);
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  stop(): void {
    this.informer.stop();
  }

  get(key: string): T | undefined {
    return this.informer.get(key);
  }

  /**
   * Calls `on` with the version of `key` already cached (if any) and then with every version the watch
   * delivers, until `on` returns true. Register it before the write whose effects it times.
   */
  follow(key: string, on: (obj: T, at: number) => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.followers.delete(f);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${JSON.stringify(this.informer.get(key) ?? null)}`));
      }, timeoutMs);
      const f: Follower<T> = {
        key,
        on,
        done: () => {
          clearTimeout(timer);
          this.followers.delete(f);
          resolve();
        },
        fail: (e) => {
          clearTimeout(timer);
          this.followers.delete(f);
          reject(e);
        },
      };
      this.followers.add(f);
      const cached = this.informer.get(key);
      if (cached) this.deliver(f, cached, performance.now());
    });
  }

  private seen(obj: T, at: number): void {
    const key = objectKey(obj);
    for (const f of [...this.followers]) if (f.key === key) this.deliver(f, obj, at);
  }

  private deliver(f: Follower<T>, obj: T, at: number): void {
    try {
      if (f.on(obj, at)) f.done();
    } catch (e) {
      f.fail(e as Error);
    }
  }
}
