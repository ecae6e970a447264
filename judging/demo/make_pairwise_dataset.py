"""Generate judging/demo/pairwise_answers.csv, the pairwise demo dataset (deterministic).

The committed CSV is the data; this script documents where it came from and rebuilds it
byte-for-byte: `python -m judging.demo.make_pairwise_dataset`.

The scenario: three support assistants ("atlas", "breeze", "comet") answered the same customer
questions, and an analyst compares them two at a time. Each row is one comparison: a question,
response A from one system and response B from another (which system is shown first is drawn at
random, so the first position is no hint). Each answer has a hidden quality: atlas covers every
point, breeze some, comet rarely any. `quality_a` / `quality_b` carry it; the simulator reads it
(`judging.demo.demo_gold`), and `gold` is the better response by it (TIE within 0.1).
"""

from __future__ import annotations

import csv
import pathlib
import random

# question -> the points a complete answer makes.
QUESTIONS: dict[str, tuple[str, str, str]] = {
    "How do I reset my router to factory settings?": (
        "hold the reset button on the back for about 10 seconds while it is powered on",
        "wait for the lights to blink and the router to restart",
        "log in again with the default password printed on the label"),
    "Why is my dishwasher leaving spots on glasses?": (
        "refill the rinse aid dispenser",
        "use a dishwasher salt if your water is hard",
        "clean the filter at the bottom of the tub"),
    "How do I descale an electric kettle?": (
        "fill it halfway with equal parts water and white vinegar",
        "boil it and leave it to stand for an hour",
        "rinse it and boil fresh water twice before use"),
    "Can I return an item bought on sale?": (
        "sale items can be returned within 30 days like any other item",
        "keep the receipt or order number",
        "the refund is the price you paid, not the original price"),
    "How do I change the time on my oven clock?": (
        "press and hold the clock button until the digits flash",
        "set the hours and minutes with the plus and minus keys",
        "press the clock button again to confirm"),
    "Why does my phone battery drain overnight?": (
        "check which apps use battery in the background in the settings",
        "turn off background refresh for apps you do not need",
        "a battery older than two years may need replacing"),
    "How do I clean a cast iron pan?": (
        "wash it with hot water and a brush, a little soap is fine",
        "dry it fully on the hob straight away",
        "rub in a thin layer of oil before storing it"),
    "What does the warranty on my vacuum cover?": (
        "the motor and parts are covered for two years",
        "filters, bags and brushes wear out and are not covered",
        "register the product online to claim"),
    "How do I stop my washing machine from smelling?": (
        "run an empty hot wash with a cleaner once a month",
        "leave the door and the drawer open after washing",
        "wipe the rubber seal and clean the drain filter"),
    "How long does standard delivery take?": (
        "standard delivery takes three to five working days",
        "you get a tracking link by email once it ships",
        "orders placed after 2 pm ship the next working day"),
    "How do I pair wireless earbuds with my laptop?": (
        "put the earbuds in their case and hold the case button until the light flashes",
        "open the Bluetooth settings on the laptop and choose add device",
        "select the earbuds from the list and confirm the pairing"),
    "Why is my fridge making a clicking noise?": (
        "a click every few minutes is often the start relay of the compressor",
        "check that the coils at the back are clean and free",
        "if it clicks and never starts cooling, call for a repair"),
    "How do I cancel my subscription?": (
        "go to your account page and open subscriptions",
        "choose cancel and confirm",
        "you keep access until the end of the period you paid for"),
    "Can I use my coffee machine with ground coffee instead of pods?": (
        "only if it has a ground coffee basket or a refillable pod",
        "use a medium grind so the water can pass through",
        "clean the basket after each use to avoid clogging"),
    "How do I update the firmware on my smart TV?": (
        "open settings, then support, then software update",
        "choose update now and keep the TV on until it finishes",
        "turn on automatic updates so it updates itself"),
    "What should I do if my order arrives damaged?": (
        "take photos of the item and the packaging",
        "report it within 48 hours from your order page",
        "choose a replacement or a refund, and the return is free"),
    "How do I sharpen kitchen knives at home?": (
        "use a whetstone soaked in water, coarse side first",
        "hold the blade at about 15 to 20 degrees and draw it across the stone",
        "finish on the fine side and hone with a steel"),
    "How can I lower my heating bill?": (
        "turn the thermostat down by one degree",
        "bleed the radiators so they heat evenly",
        "close curtains at dusk and seal draughts around doors"),
    "How do I set up two-factor authentication?": (
        "open security settings in your account",
        "scan the QR code with an authenticator app",
        "save the backup codes somewhere safe"),
    "Why won't my printer connect to Wi-Fi?": (
        "make sure the printer and the router use the same 2.4 GHz network",
        "restart the printer and the router",
        "run the wireless setup wizard from the printer's menu"),
}

SYSTEMS = {"atlas": 0.85, "breeze": 0.55, "comet": 0.25}  # mean quality
PAIRS = [("atlas", "breeze"), ("breeze", "comet"), ("atlas", "comet")]
TIE_MARGIN = 0.1  # the simulator's margin too (judging.simulator.sim_server)


def answer(system: str, question: str, points: tuple[str, ...], rng: random.Random) -> str:
    """One system's answer: atlas makes every point, breeze one or two, comet is vague."""
    if system == "atlas":
        said = list(points)
        return f"{said[0].capitalize()}, then {said[1]}. Finally, {said[2]}."
    if system == "breeze":
        said = rng.sample(points, k=rng.choice((1, 2)))
        return ("You can " + " and ".join(said) + ". Contact us if that does not help.")
    vague = rng.choice(("It depends on the model; check the manual.",
                        "Try turning it off and on again.",
                        "Our team can help with that, please get in touch."))
    return f"{vague} ({question.rstrip('?').lower()})"


def build(seed: int = 7) -> list[dict[str, str]]:
    rng = random.Random(seed)
    answers: dict[tuple[str, str], tuple[str, float]] = {}
    for question, points in QUESTIONS.items():
        for system, mean in SYSTEMS.items():
            quality = round(min(1.0, max(0.0, rng.gauss(mean, 0.08))), 2)
            answers[(question, system)] = (answer(system, question, points, rng), quality)
    rows = []
    for number, (question, (first, second)) in enumerate(
        (q, pair) for q in QUESTIONS for pair in PAIRS
    ):
        if rng.random() < 0.5:
            first, second = second, first
        (text_a, quality_a), (text_b, quality_b) = answers[(question, first)], answers[
            (question, second)]
        if abs(quality_a - quality_b) <= TIE_MARGIN:
            gold = "TIE"
        else:
            gold = "A" if quality_a > quality_b else "B"
        rows.append({
            "id": f"CMP-{number + 1:04d}", "question": question, "system_a": first,
            "answer_a": text_a, "system_b": second, "answer_b": text_b, "gold": gold,
            "quality_a": f"{quality_a:.2f}", "quality_b": f"{quality_b:.2f}",
        })
    return rows


def main() -> None:
    rows = build()
    path = pathlib.Path(__file__).parent / "pairwise_answers.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} comparisons to {path}")


if __name__ == "__main__":
    main()
