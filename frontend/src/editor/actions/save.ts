// Ctrl-S saves a revision (or the block version, in a block's body), even from a text field.
import { type EditorAction, withMod } from "./types";

export const save: EditorAction = {
  name: "save",
  keyTest: (e) => withMod(e) && e.key.toLowerCase() === "s",
  whileTyping: true,
  preventDefault: true,
  perform: ({ onSave }) => onSave(),
};
