"""Panel: build critics from vendor presets, the scale and the voting; preview, test, save."""

import datetime as dt

import streamlit as st

from judging.demo import demo_panel_path
from judging.errors import PlaceholderError
from judging.panel.panel_files import dump_panel, import_prompt_yaml, load_panel, panel_hash
from judging.panel.vendors import PRESETS
from judging.panel.web_policy import refuse_python_critics
from judging.verdicts import PLUGIN_KINDS
from pages.ui.cards import verdict_card
from pages.ui.error_notes import user_errors
from pages.ui.panel import panel_draft as drafts
from pages.ui.panel import panel_editors as editors
from pages.ui.panel.critic_check_view import check_button
from pages.ui.panel.judge import STAND_IN, judge_one, request_preview
from pages.ui.shell import ensure_app_shell
from pages.ui.state import db
from pages.ui.text_format import plain
from storage.datasets.column_guess import prompt_columns
from storage.datasets.dataset_store import list_datasets, load_items
from storage.panels import list_panels, save_panel

SAVED_KEY = "panel_page.saved_version"


def local_time(stamp: str) -> str:
    """A stored UTC time as this machine's HH:MM (the app and its user share a clock)."""
    return dt.datetime.fromisoformat(stamp).astimezone().strftime("%H:%M")


ensure_app_shell()
st.title("Panel")
datasets = list_datasets(db())
# A fresh panel's prompt is built over the newest dataset's fields, so it fits it at once;
# not its gold or gold-like fields, which would show the critic the answer.
newest_fields = (prompt_columns(datasets[0]["fields"], datasets[0]["gold_column"])
                 if datasets else None)
draft = drafts.get_draft(newest_fields)
stored_at = drafts.restored_at()
if stored_at:  # a reload or a typed URL ended the session that was editing it
    note_col, discard_col = st.columns([5, 1], vertical_alignment="center")
    note_col.info(f"Restored your unsaved draft from {local_time(stored_at)}.",
                  icon=":material/history:")
    if discard_col.button("Discard", key="discard_draft", icon=":material/delete:",
                          help="Throw the restored draft away and start from a fresh panel."):
        drafts.discard_restored(newest_fields)
        st.rerun()

load_col, import_col, prompt_col = st.columns(3)
with load_col.popover("Load a panel", icon=":material/folder_open:", width="stretch"):
    saved = list_panels(db())
    choices = {"demo": "Demo panel (simulated critics)"} | {
        p["hash"]: f"{p['name']} · {p['hash'][:8]}" for p in saved
    }
    chosen = st.selectbox("Panel", list(choices), format_func=choices.get, key="load_choice")
    if st.button("Load into the editor", key="load_panel"):
        with user_errors("The panel could not be loaded"):
            if chosen == "demo":
                panel = load_panel(demo_panel_path())
            else:
                panel = load_panel(next(p["yaml"] for p in saved if p["hash"] == chosen))
            drafts.set_draft(drafts.draft_from_panel(panel))
            st.rerun()
with import_col.popover("Import panel YAML", icon=":material/upload_file:", width="stretch"):
    yaml_file = st.file_uploader("Panel YAML", type=["yaml", "yml"], key="panel_yaml_upload")
    if yaml_file is not None and st.button("Import", key="import_panel_yaml"):
        with user_errors(f"{yaml_file.name} was not imported"):
            text = yaml_file.getvalue().decode("utf-8", errors="strict")
            uploaded = load_panel(text)  # validates; imports nothing
            refuse_python_critics(uploaded)  # code named by an uploaded file is never run
            drafts.set_draft(drafts.draft_from_panel(uploaded))
            st.rerun()
with prompt_col.popover("Import a prompt YAML as a critic", icon=":material/note_add:",
                        width="stretch"):
    st.caption("The `version` / `system_prompt` / `user_prompt_template` shape of other judge "
               "libraries; `{{ var }}` placeholders become `{var}`.")
    prompt_file = st.file_uploader("Prompt YAML", type=["yaml", "yml"], key="prompt_yaml_upload")
    critic_name = st.text_input("Critic name", value="imported", key="prompt_critic_name")
    critic_model = st.text_input("Model", value="sim-careful", key="prompt_critic_model")
    if prompt_file is not None and st.button("Add critic", key="import_prompt"):
        with user_errors(f"{prompt_file.name} was not imported"):
            critic = import_prompt_yaml(
                prompt_file.getvalue().decode("utf-8"), name=critic_name, model=critic_model
            )
            draft["critics"].append(drafts._with_uid(critic.model_dump(mode="json")))
            st.session_state[editors.open_editor_key(draft, len(draft["critics"]) - 1)] = True
            st.rerun()

editors.header_editor(draft)

st.subheader("Scale")
editors.scale_editor(draft)

st.subheader("Critics")
action = None
for index in range(len(draft["critics"])):
    # Keyed but untracked: the browser keeps each editor open or closed as the user left it,
    # also across renames (the block's identity is its key, not its label). `expanded` only
    # decides how an editor first appears (open for a short panel, and for a critic just added
    # or duplicated) and never changes afterwards: a changed value would be applied again.
    starts_open = st.session_state.setdefault(editors.open_editor_key(draft, index),
                                              len(draft["critics"]) <= 2)
    with st.expander(editors.critic_title(draft, index), key=editors.editor_key(draft, index),
                     expanded=starts_open):
        asked = editors.critic_editor(draft, index)
        if asked is not None:
            action = (asked, index)
if action is not None:
    asked, index = action
    if asked == "remove":
        draft["critics"].pop(index)
    else:
        st.session_state[editors.open_editor_key(draft, drafts.duplicate_critic(draft, index))] = True
    st.rerun()
add_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
preset = add_col.selectbox("Add a critic from a vendor preset", list(PRESETS),
                           index=list(PRESETS).index("simulated"),
                           format_func=lambda v: PRESETS[v].title, key="add_preset")
if button_col.button("Add critic", icon=":material/add:", key="add_critic"):
    added = drafts.add_critic(draft, preset, newest_fields)
    st.session_state[editors.open_editor_key(draft, added)] = True  # the new one opens
    st.rerun()

st.subheader("Voting")
editors.voting_editor(draft)
with st.expander("Cascade (tiers)", expanded=len({c.get("tier") for c in draft["critics"]}) > 1
                 or bool(draft["cascade"].get("tiers"))):
    editors.cascade_editor(draft)
with st.expander("Juries (sub-panels combined by the voting above)",
                 expanded=bool(draft.get("juries"))):
    editors.juries_editor(draft)
with st.expander("Per-vendor limits", expanded=bool(draft.get("limits"))):
    editors.limits_editor(draft)
with st.expander("Taxonomy curation", expanded=bool(draft["curation"].get("class_field"))):
    editors.curation_editor(draft)
with st.expander("Pairwise comparison", expanded=bool(draft["pairwise"].get("first_field"))):
    editors.pairwise_editor(draft)
with st.expander("Rubric", expanded=bool(draft["rubric"].get("criteria"))):
    editors.rubric_editor(draft)
with st.expander("Over-long items", expanded=draft["context_guard"].get("over_long",
                                                                        "send") != "send"):
    editors.context_guard_editor(draft)
# Every editor has applied its widgets: an edit of this run is kept before anything else runs.
drafts.keep_draft(draft)

st.subheader("Preview and test on a sample item")
if not datasets:
    st.info("Import a dataset (Datasets page) to preview prompts on a real item.")
elif draft["critics"]:
    by_id = {d["id"]: d for d in datasets}
    # Keyed by the draft's generation: after loading or importing a panel the selectors start
    # afresh (a stale critic index pointed past the new panel's critics), on a dataset the
    # panel's prompts fit when there is one.
    preview_key = f"{drafts.key_prefix(draft)}.preview"
    cols = st.columns(3)
    dataset_ids = list(by_id)
    fitting = drafts.fitting_dataset(draft, datasets)
    dataset_id = cols[0].selectbox("Dataset", dataset_ids, key=f"{preview_key}.dataset",
                                   index=dataset_ids.index(fitting) if fitting in by_id else 0,
                                   format_func=lambda i: f"#{i} {by_id[i]['name']}")
    items = load_items(db(), dataset_id, limit=200)
    item_index = cols[1].selectbox("Item", range(len(items)), key=f"{preview_key}.item.{dataset_id}",
                                   format_func=lambda i: items[i].id)
    critic_index = cols[2].selectbox("Critic", range(len(draft["critics"])),
                                     key=f"{preview_key}.critic",
                                     format_func=lambda i: draft["critics"][i]["name"])
    item = items[item_index]
    with user_errors("The prompt cannot be rendered"):
        critic = drafts.critic_from_draft(draft, critic_index)
        preview_panel = drafts.build_panel(draft)
        steps = []
        if critic.kind in PLUGIN_KINDS:
            checks = critic.rule.describe() if critic.rule else critic.function
            st.caption(plain(f"{critic.name} sends no request: it checks {checks} here, "
                             "free."))
            if st.button("Test this critic on this item", icon=":material/science:",
                         key="test_critic"):
                verdict_card(judge_one(preview_panel, critic.name, item), show_raw=True)
        try:
            # The requests the run would send, built by the call layer itself (not a likeness).
            steps = request_preview(preview_panel, critic.name, item)
        except PlaceholderError as error:
            # The panel may be right and this dataset the wrong one: a hint, not a failure.
            st.warning(f"This prompt does not fit dataset #{dataset_id}: {plain(str(error))}")
        if len(steps) > 1:
            st.caption(f"{plain(critic.name)} sends {len(steps)} requests for this item, in this "
                       "order.")
        if critic.samples > 1:
            st.caption(f"Each request is sent {critic.samples} times (samples); the answers are "
                       "put to a vote.")
        for number, step in enumerate(steps, start=1):
            if len(steps) > 1:
                who = "" if step.critic == critic.name else f" · asked of {step.critic}"
                st.markdown(f"**Request {number}** · " + plain(f"{step.role or 'judge'}{who}"))
            if step.after_stand_in:
                st.caption(f"Where it says {STAND_IN!r}, the real request quotes the answer to "
                           "the request before.")
            for message in step.messages:
                st.caption(message["role"])
                # Plain text in a code block: item text is never interpreted as markdown or HTML.
                st.code(message["content"], language=None, wrap_lines=True)
        messages = [m for step in steps for m in step.messages]
        if messages and st.button("Test this critic on this item", icon=":material/science:",
                                  key="test_critic"):
            with st.spinner(f"Calling {critic.name}..."):
                verdict = judge_one(drafts.build_panel(draft), critic.name, item)
            verdict_card(verdict, show_raw=True)
        check_button(drafts.build_panel(draft), item, key="check_critics")  # every critic, at once

st.subheader("Save and export")
panel = None
with user_errors("The panel is not valid yet"):
    panel = drafts.build_panel(draft)
if panel is not None:
    text = dump_panel(panel)
    version = panel_hash(panel)
    st.caption(f"Version {version} · {len(panel.critics)} critics · strategy {panel.voting.strategy}")
    tie_rule = editors.tie_sentence(panel.voting, panel.scale, panel.rubric)
    if tie_rule:
        st.info(plain(tie_rule), icon=":material/balance:")
    save_col, download_col = st.columns(2)
    if save_col.button("Save panel", type="primary", icon=":material/save:", key="save_panel"):
        save_panel(db(), panel_hash=version, name=panel.name, yaml_text=text)
        drafts.mark_saved(draft)
        st.session_state[SAVED_KEY] = version
    # "ignore": a download does not rerun the page (it used to wipe the save confirmation).
    download_col.download_button("Download YAML", text, file_name=f"{panel.name}.yaml",
                                 mime="application/x-yaml", icon=":material/download:",
                                 on_click="ignore")
    # Shown while the editor still holds the version saved (any edit makes a new version).
    if st.session_state.get(SAVED_KEY) == version:
        st.success(f"Saved {plain(repr(panel.name))} as version {version}.")
        st.page_link("pages/run.py", label="Run this panel", icon=":material/play_arrow:",
                     query_params={drafts.RUN_PANEL_PARAM: version})

with st.expander("Saved panels"):
    saved = list_panels(db())
    if saved:
        st.dataframe([{"name": p["name"], "version": p["hash"], "runs": p["n_runs"],
                       "saved": p["created_at"][:19]} for p in saved], hide_index=True)
    else:
        st.caption("None yet.")
