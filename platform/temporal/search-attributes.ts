import { isGrpcServiceError, type ConnectionLike } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { EngineError } from '../../core/engine-error';
import { runSearchAttributeKeys, searchAttributeTypeName } from '../../core/search-attributes';
import type { Logger } from '../logger';
import { isUnreachableTemporal } from './unreachable';

/*
 * The namespace's search attributes: runs start with threadId, agentId and RunStatus and are listed
 * by them, so a namespace that lacks one refuses every start. A cluster comes without them: the
 * worker and the API add what is missing through the operator service, and where they may not
 * (Temporal Cloud, or a server that refuses) the operator must: /readyz and every run start then
 * answer 503 with the command. The list is core/search-attributes.ts's.
 */

/** Any attribute the engine may list (today's are all Keyword). */
type AttributeKey = { name: string; type: SearchAttributeType };

/** gRPC status codes (@grpc/grpc-js's `status`, which is not a dependency of ours). */
const INVALID_ARGUMENT = 3;
const ALREADY_EXISTS = 6;

const CALL_DEADLINE_MS = 5_000;
/** How long a registered attribute may take to reach the frontend's cache of the namespace. */
const USABLE_WITHIN_MS = 15_000;

/** The calls this needs, which a client's connection and a worker's native connection both have. */
export type TemporalServices = Pick<ConnectionLike, 'operatorService' | 'workflowService' | 'withDeadline'>;

/** The operator's command that adds `keys`: the CLI pairs each `--name` with the `--type` of the same rank. */
export function addCommand(namespace: string, keys: readonly AttributeKey[]): string {
  const pairs = keys.map((k) => `--name ${k.name} --type ${searchAttributeTypeName(k)}`);
  return `temporal operator search-attribute create --namespace ${namespace} ${pairs.join(' ')}`;
}

/** What /readyz and a run start say while the namespace lacks `keys`. */
export function missingAttributesText(namespace: string, keys: readonly AttributeKey[]): string {
  return `Namespace ${namespace} lacks the search attributes ${keys.map((k) => k.name).join(', ')}, which runs start with, `
    + `and this engine could not add them (its log says why): add them with ${addCommand(namespace, keys)}`;
}

/** A start refused because the namespace has no mapping for an attribute it carries (INVALID_ARGUMENT). */
export function isUnmappedSearchAttribute(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (isGrpcServiceError(e)) {
      return e.code === INVALID_ARGUMENT && /no mapping defined for search attribute/i.test(e.details || e.message);
    }
  }
  return false;
}

const indexedType = (key: AttributeKey) =>
  temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}` as keyof typeof temporal.api.enums.v1.IndexedValueType];

/**
 * The namespace's attributes, as one process knows them: once all are known present, `ensure()`
 * answers without a call, until `forget()` (a start that was refused for want of one).
 */
export class SearchAttributeGuard {
  private present = false;
  private looking?: Promise<AttributeKey[]>;
  /** a refusal is logged at warn once, not at every start and readiness probe while it lasts */
  private refusalLogged = false;

  constructor(private readonly services: TemporalServices, private readonly namespace: string, private readonly logger: Logger) {}

  /** Resolves when the namespace has them all (adding the missing ones); else throws the 503's EngineError. */
  async ensure(): Promise<void> {
    if (this.present) return;
    const missing = await this.refresh();
    if (missing.length > 0) throw new EngineError('search_attributes_missing', missingAttributesText(this.namespace, missing));
  }

  /**
   * Runs `start`, which carries search attributes, once the namespace has them. A start refused for
   * want of one (the namespace lost it since it was known present) makes the guard look again, add
   * it where it may, and start once more.
   */
  async withAttributes<T>(start: () => Promise<T>): Promise<T> {
    await this.ensure();
    try {
      return await start();
    } catch (err) {
      if (!isUnmappedSearchAttribute(err)) throw err;
      this.forget();
      await this.ensure();
    }
    try {
      return await start();
    } catch (err) {
      if (!isUnmappedSearchAttribute(err)) throw err;
      throw new EngineError('search_attributes_missing', missingAttributesText(this.namespace, runSearchAttributeKeys));
    }
  }

  /** A fresh look, adding what is missing where it may: what is still missing after it ([] when none). */
  refresh(): Promise<AttributeKey[]> {
    this.looking ??= this.lookAndAdd().finally(() => (this.looking = undefined));
    return this.looking;
  }

  forget(): void {
    this.present = false;
  }

  private async lookAndAdd(): Promise<AttributeKey[]> {
    const missing = await this.missing();
    if (missing.length > 0 && !(await this.add(missing))) return missing;
    this.present = true;
    this.refusalLogged = false;
    return [];
  }

  /**
   * What the namespace lacks; none when it may not be asked (a proxy or a key without the operator
   * service's read): then a start that lacks one says so itself (isUnmappedSearchAttribute).
   */
  private async missing(): Promise<AttributeKey[]> {
    try {
      const { customAttributes } = await this.call(() => this.services.operatorService.listSearchAttributes({ namespace: this.namespace }));
      return runSearchAttributeKeys.filter((k) => !customAttributes?.[k.name]);
    } catch (err) {
      if (isUnreachableTemporal(err) || !isGrpcServiceError(err)) throw err;
      this.logOnce({ err, namespace: this.namespace }, 'could not list the namespace\'s search attributes: runs start as if it had them');
      return [];
    }
  }

  /** Whether `keys` were added (or were there already), and can be used. */
  private async add(keys: AttributeKey[]): Promise<boolean> {
    try {
      await this.call(() => this.services.operatorService.addSearchAttributes({
        namespace: this.namespace, searchAttributes: Object.fromEntries(keys.map((k) => [k.name, indexedType(k)])),
      }));
    } catch (err) {
      if (isUnreachableTemporal(err)) throw err;
      if (!(isGrpcServiceError(err) && err.code === ALREADY_EXISTS)) {
        this.logOnce({ err, namespace: this.namespace, missing: keys.map((k) => k.name), add: addCommand(this.namespace, keys) },
          'Temporal refused to add the search attributes runs start with: runs cannot start until the operator adds them');
        return false;
      }
    }
    await this.untilUsable(keys);
    this.logger.info({ namespace: this.namespace, added: keys.map((k) => k.name) }, 'added the search attributes runs start with');
    return true;
  }

  /**
   * A query naming them passes once the frontend's cache of the namespace has them (at once on a
   * single server). Past the bound, a start that finds one still unmapped says so itself.
   */
  private async untilUsable(keys: AttributeKey[]): Promise<void> {
    const query = keys.map((k) => `${k.name} IS NULL`).join(' AND ');
    const deadline = Date.now() + USABLE_WITHIN_MS;
    while (Date.now() < deadline) {
      try {
        await this.call(() => this.services.workflowService.countWorkflowExecutions({ namespace: this.namespace, query }));
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  private logOnce(fields: Record<string, unknown>, message: string): void {
    if (this.refusalLogged) this.logger.debug(fields, message);
    else this.logger.warn(fields, message);
    this.refusalLogged = true;
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return this.services.withDeadline(Date.now() + CALL_DEADLINE_MS, fn);
  }
}
