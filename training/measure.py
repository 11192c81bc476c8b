"""`python -m training.measure --model FOLDER [--system-prompt full] [--max-length N] DATA...`

The token lengths of SFT rows as the SFT stage will see them: the same rows (`load_sft_rows`),
the same system prompt choice (`chat_row`) and the same model's tokenizer and chat template
(`tokenize_with_mask`). Run as a child by core/train/measure.py before a launch, so the studio
and `hat train sft` can derive max_length from the data chosen and refuse a length that leaves
no reply token to train on (the stage would fail after loading the model). Prints one JSON
object; exit 3 on bad data (the message on stderr), like the stage.
"""

from __future__ import annotations

import argparse
import json
import sys

from core.train.data import DataError, chat_row, load_sft_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.measure")
    parser.add_argument("--model", required=True)
    parser.add_argument("--system-prompt", default="full")
    parser.add_argument("--max-rows", type=int, default=None)
    parser.add_argument("data", nargs="+")
    args = parser.parse_args(argv)
    try:
        loaded = load_sft_rows(args.data, max_rows=args.max_rows)
    except DataError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    from training.common import load_tokenizer
    from training.sft import tokenize_with_mask

    tokenizer = load_tokenizer(args.model)
    lengths: list[int] = []
    first_reply: list[int] = []
    unreadable = 0
    for row in loaded.rows:
        try:
            item = tokenize_with_mask(tokenizer, chat_row(row, system_prompt=args.system_prompt))
        except ValueError:
            unreadable += 1
            continue
        mask = item["assistant_masks"]
        if 1 not in mask:
            unreadable += 1
            continue
        lengths.append(len(item["input_ids"]))
        first_reply.append(mask.index(1))
    print(json.dumps({"lengths": lengths, "first_reply": first_reply, "unreadable": unreadable}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
