"""Issue 46's verdict attacks: each finding's payload run against the code of a given tree."""
