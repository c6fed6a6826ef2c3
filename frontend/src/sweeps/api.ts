// REST calls of the sweep pages (/api/sweeps/).
import { apiRequest, resultsOf } from "../api/client";
import type { Page } from "../api/types";
import type { Sweep, SweepCreateBody, SweepDetail } from "./types";

export const sweepsApi = {
  list: async (team: number) => resultsOf(await apiRequest<Page<Sweep> | Sweep[]>("GET", `/api/sweeps/?team=${team}&page_size=200`)),
  get: (id: number) => apiRequest<SweepDetail>("GET", `/api/sweeps/${id}/`),
  create: (body: SweepCreateBody) => apiRequest<Sweep>("POST", "/api/sweeps/", body),
  cancel: (id: number) => apiRequest<SweepDetail>("POST", `/api/sweeps/${id}/cancel/`, {}),
};
