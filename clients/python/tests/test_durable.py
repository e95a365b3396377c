"""Where a durable receiver resumes (umstore.durable.decide), as the Go
receiver decides it (receiver/resume.go)."""

import unittest

from umstore import wire
from umstore.durable import decide


def leader(consumed, known=True):
    return wire.ReceiverRegistered(known=known, recorded=consumed > 0, consumed=consumed)


class Decide(unittest.TestCase):
    def test_majority_takes_each_leader_and_the_latest_group(self):
        groups = [(leader(40), [(True, 40), (True, 38), (True, 40)], 3),
                  (leader(45), [(True, 45), (True, 45)], 3)]
        self.assertEqual(decide("majority", groups), 45)

    def test_majority_without_a_leader_needs_a_majority_of_stores(self):
        # No leader answered: the highest position two of three reached.
        self.assertEqual(decide("majority", [(None, [(True, 50), (True, 30), (True, 10)], 3)]), 30)
        # Only one store answered: the group is ignored.
        self.assertEqual(decide("majority", [(None, [(True, 50)], 3)]), 0)

    def test_lowest_and_highest(self):
        groups = [(leader(40), [(True, 40), (True, 38), (False, 0)], 3), (leader(45), [(True, 45)], 3)]
        self.assertEqual(decide("lowest", groups), 38)
        self.assertEqual(decide("highest", groups), 45)

    def test_a_new_name(self):
        self.assertEqual(decide("majority", [(leader(0), [(True, 0)] * 3, 3)]), 0)
        self.assertEqual(decide("lowest", []), 0)


if __name__ == "__main__":
    unittest.main()
