import type { z } from 'zod';
import type { RequestContract, StreamContract } from '@gatehouse/contracts';
import type { HandlerContext, StreamWriter, Worker } from './worker.ts';

type AnyOperation = RequestContract<z.ZodType, z.ZodType> | StreamContract<z.ZodType, z.ZodType, z.ZodType>;

/** The handler an operation needs: frames for a stream contract, a reply for a request contract. */
export type OperationHandler<C> =
  C extends StreamContract<infer Req, infer M, infer E>
    ? (req: z.infer<Req>, out: StreamWriter<z.input<M>, z.input<E>>, ctx: HandlerContext) => Promise<void>
    : C extends RequestContract<infer Req, infer Res>
      ? (req: z.infer<Req>, ctx: HandlerContext) => Promise<z.input<Res>>
      : never;

/** A worker's handler table: one handler per operation of a catalog in contracts/, none missing, each typed by its contract. */
export type CatalogHandlers<Cat extends Record<string, AnyOperation>> = { [Op in keyof Cat]: OperationHandler<Cat[Op]> };

/** Serve every operation of a catalog with its handler from the table. */
export function serveCatalog<Cat extends Record<string, AnyOperation>>(worker: Worker, catalog: Cat, handlers: CatalogHandlers<Cat>): void {
  for (const op of Object.keys(catalog) as (keyof Cat & string)[]) {
    const c = catalog[op]!;
    // CatalogHandlers already tied each handler to its contract; the loop only dispatches on kind.
    if (c.kind === 'stream') worker.stream(c, handlers[op] as unknown as Parameters<Worker['stream']>[1]);
    else worker.handle(c, handlers[op] as unknown as Parameters<Worker['handle']>[1]);
  }
}
