// A wire labelled with the shape it carries (the inferred output shape of its source or port).
import { BaseEdge, EdgeLabelRenderer, type EdgeProps, type EdgeTypes, getBezierPath } from "@xyflow/react";
import { memo } from "react";
import { formatShape } from "../format";
import { useCheck } from "./context";

export const ShapeEdge = memo(function ShapeEdge(props: EdgeProps) {
  const { id, source, target, sourceHandleId, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, markerEnd, selected } = props;
  const [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, sourcePosition, targetX, targetY, targetPosition });
  const info = useCheck().report?.nodes[source];
  // A wire from output port k (handle "outK") carries that port's shape, not the node's first.
  const port = /^out(\d+)$/.exec(sourceHandleId ?? "");
  const shape = port ? (info?.ports?.[Number(port[1])] ?? null) : info?.shape;
  return (
    <>
      <BaseEdge id={id} path={path} markerEnd={markerEnd} className={selected ? "edge-selected" : undefined} />
      {shape && (
        <EdgeLabelRenderer>
          <div
            className="edge-label"
            data-testid={`edge-shape-${source}-${target.replace(":", "-")}`}
            style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}
          >
            {formatShape(shape)}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
});

// "default" too, so every wire (loaded or drawn) gets its shape label without a type on the edge.
export const edgeTypes: EdgeTypes = { default: ShapeEdge, shape: ShapeEdge };
