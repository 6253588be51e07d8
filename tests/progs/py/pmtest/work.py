"""Plain (non-async) functions: crunch is probed, Busy.crunch is not."""
import time


def crunch(seconds):
    time.sleep(seconds)
    return seconds


class Busy:
    def crunch(self, seconds):
        time.sleep(seconds)
