// The notices above the canvas: a newer revision someone saved (an API client's, different from the
// shared canvas), a block version to upgrade to, and the block body being edited.
import type { BlockMode } from "../editorTypes";
import { type LatestInfo, savedSentence } from "../newerRevision";
import type { BlockEdit, UpgradeOffer } from "./useBlockEdits";

export interface RemoteBannerProps {
  remote: LatestInfo;
  savedRevision: number | null;
  dirty: boolean;
  onLoad: () => void;
  onDiff: () => void;
}

export function RemoteBanner({ remote, savedRevision, dirty, onLoad, onDiff }: RemoteBannerProps) {
  return (
    <div className="banner remote-banner" role="status" data-testid="remote-banner">
      <span>{savedSentence(remote)}</span>
      <span className="muted">—</span>
      <button type="button" data-testid="remote-load" onClick={onLoad}>
        Load it
      </button>
      {savedRevision !== null && (
        <button type="button" data-testid="remote-diff" onClick={onDiff}>
          See changes
        </button>
      )}
      {dirty && <span className="muted small">Loading it puts your unsaved changes aside (Undo brings them back).</span>}
    </div>
  );
}

export interface UpgradeBannerProps {
  offer: UpgradeOffer;
  /** The instances on the canvas below not on the offered version yet. */
  count: number;
  onAccept: () => void;
  onDismiss: () => void;
}

export function UpgradeBanner({ offer, count, onAccept, onDismiss }: UpgradeBannerProps) {
  return (
    <div className="banner" role="status" data-testid="upgrade-offer">
      <span>
        {offer.library.name} v{offer.version} is saved in the team library.
      </span>
      <button type="button" data-testid="upgrade-offer-accept" onClick={onAccept}>
        Upgrade the {count === 1 ? "instance" : `${count} instances`} here to v{offer.version}
      </button>
      <button type="button" data-testid="upgrade-offer-dismiss" onClick={onDismiss}>
        Not now
      </button>
    </div>
  );
}

/** Above a block's body: what is being edited, why it cannot be saved, and an offer for the body below. */
export function BlockBanner({ edit, blockMode, upgrade }: { edit: BlockEdit; blockMode: BlockMode; upgrade: React.ReactNode }) {
  return (
    <>
      <div className="banner" role="status" data-testid="block-mode-banner">
        Editing the body of {edit.open.block.name} v{edit.open.block.version}: its inputs are the graph inputs here, shaped as {edit.open.instance} receives them.
        {!blockMode.canSave && " It is not in your team's library, so it cannot get a new version."}
      </div>
      {blockMode.problem && (
        <div className="banner error" role="alert" data-testid="block-save-error">
          {blockMode.problem}
        </div>
      )}
      {upgrade}
    </>
  );
}
