print("badgepipe")
