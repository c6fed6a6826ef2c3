// Validates custom resources against their CRD's OpenAPI schema, with the models that
// @kubernetes-models generates from each project's published CRDs (KEDA's here).
// stdin: a JSON array of objects; stdout: a JSON array of {kind, name, error} (error null when valid).
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { TriggerAuthentication } from "@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication";

const MODELS = {
  "keda.sh/v1alpha1/ScaledObject": ScaledObject,
  "keda.sh/v1alpha1/TriggerAuthentication": TriggerAuthentication,
};

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map((object) => {
  const key = `${object.apiVersion}/${object.kind}`;
  const Model = MODELS[key];
  const name = object.metadata?.name ?? null;
  if (!Model) return { kind: key, name, error: `no CRD schema kept for ${key}` };
  try {
    new Model(object).validate();
    return { kind: key, name, error: null };
  } catch (error) {
    return { kind: key, name, error: String(error.message ?? error) };
  }
});
process.stdout.write(JSON.stringify(results));
