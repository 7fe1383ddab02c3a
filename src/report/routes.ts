// Read API over stored installs.
import { Elysia, t } from "elysia";
import { ErrorBody, errorBody } from "../errors.ts";
import type { Store } from "../store/store.ts";
import { InstallRecord, toRecord } from "./record.ts";

export function reportRoutes(store: Pick<Store, "getInstall">) {
  return new Elysia({ name: "report" }).get(
    "/api/installs/:random_id",
    ({ params, status }) => {
      const row = store.getInstall(params.random_id);
      return row ? status(200, toRecord(row)) : status(404, errorBody("not_found", `no install with random_id ${params.random_id}`, "random_id"));
    },
    {
      params: t.Object({ random_id: t.String({ minLength: 1, maxLength: 128 }) }),
      response: { 200: InstallRecord, 404: ErrorBody },
      detail: { tags: ["installs"], summary: "One install by random_id" },
    },
  );
}
