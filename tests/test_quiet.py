"""Library noise raised to ERROR at its logger; run_log keeps the libraries' records in the run's folder only while a run lasts."""
import logging

from gapo_lite.quiet import NOISY_LOGGERS, quiet_libraries, run_log


def test_the_noisy_loggers_pass_errors_only():
    quiet_libraries()
    for name in NOISY_LOGGERS:
        assert not logging.getLogger(name).isEnabledFor(logging.WARNING), name
        assert logging.getLogger(name).isEnabledFor(logging.ERROR), name


def test_run_log_keeps_the_records_of_the_run_and_no_others(tmp_path):
    log = logging.getLogger("gapo_lite")
    with run_log(tmp_path / "run" / "train.log") as path:
        log.warning("during the run")
        logging.getLogger("trl.trainer").warning("from trl")
    log.warning("after the run")
    text = path.read_text()
    assert "WARNING gapo_lite: during the run" in text and "WARNING trl.trainer: from trl" in text and "after the run" not in text
